import { isUtf8 } from 'node:buffer';
import { Readable } from 'node:stream';
import { LIMITS } from '@dnc/api-contract';
import { Gauge, type Registry } from '@dnc/kit';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import secureJson from 'secure-json-parse';
import { BodyBudget, nestsDeeperThan } from '../body-budget.js';
import { PublicHttpError } from '../errors.js';
import { type BodyPhones, readScrubBody } from '../flows/scrub-body.js';
import type { LingeringClose } from './lingering-close.js';

/** Bodies up to this size are never counted nor kept waiting (a one-number request is ~100 bytes). */
export const SMALL_BODY_BYTES = 64 * 1024;
/**
 * Heap per body byte while a request is handled: the buffered body, its string, the parsed phones
 * (V8 strings and the array), and the canonical copy a job stores. Measured on 25 MiB v2 bodies.
 */
export const HEAP_PER_BODY_BYTE = 4;
declare module 'fastify' {
  interface FastifyRequest {
    /**
     * The bytes a JSON body was parsed from (routes that take a body): a v2 job's durable input is
     * taken from them when they already are its canonical form (flows/canonical-input.ts).
     */
    jsonBytes: Buffer | undefined;
    /**
     * The phones of a scrub body read in place from its bytes (`phonesFromBytes` routes, when the bytes
     * allow it: scrub-body.ts). The parsed body then holds `phones: []`; these are its phones.
     */
    bodyPhones: BodyPhones | undefined;
    /** A body left unread (a request with no route): its answer closes the connection. */
    closeAfterAnswer: boolean | undefined;
    /** When the gateway began reading the body (after any wait for room), 0 before. */
    bodyReadFrom: number;
    /** How long the JSON body took to arrive, once read (0 without one): v2 leaves it out of its budget. */
    uploadMs: number;
  }
  interface FastifyContextConfig {
    /** The route reads `request.jsonBytes` (otherwise not kept: the bytes are garbage once parsed). */
    keepJsonBytes?: boolean;
    /**
     * The route's body is a scrub body whose schema allows this many phones (its `maxItems`), and the
     * route reads `request.bodyPhones` first.
     */
    phonesFromBytes?: number;
  }
}

function budgetGauge(budget: BodyBudget, metrics: Registry): void {
  new Gauge({
    name: 'dnc_gateway_body_budget_bytes',
    help: 'Request body memory admitted (in use) and the bodies waiting for room (queued).',
    labelNames: ['state'],
    registers: [metrics],
    collect() {
      this.set({ state: 'in_use' }, budget.inUse);
      this.set({ state: 'queued' }, budget.queued);
    },
  });
}

/** Our bodies nest 2 deep (an object holding an array of strings); far deeper is never a scrub. */
export const MAX_JSON_DEPTH = 16;

export interface RequestBoundsOptions {
  budgetBytes: number;
  waitMs: number;
  metrics: Registry;
  lingering: LingeringClose;
}

function declaredLength(request: FastifyRequest): number {
  const raw = request.headers['content-length'];
  // No length (chunked): the body may be as large as the limit allows.
  if (typeof raw !== 'string' || !/^[0-9]{1,12}$/.test(raw)) return LIMITS.maxBodyBytes;
  return Math.min(Number(raw), LIMITS.maxBodyBytes + 1);
}

/** A request that sends a body: a length above 0, or one sent in chunks. */
function hasBody(request: FastifyRequest): boolean {
  const length = request.headers['content-length'];
  return (length !== undefined && length !== '0') || request.headers['transfer-encoding'] !== undefined;
}

/** Whether a Content-Encoding header names a coding other than `identity` (which is none). */
function hasContentCoding(header: string | undefined): boolean {
  if (header === undefined) return false;
  return header.split(',').some((coding) => {
    const c = coding.trim().toLowerCase();
    return c !== '' && c !== 'identity';
  });
}

function ownerOf(request: FastifyRequest): string {
  const c = request.caller;
  return c.kind === 'authenticated' ? `org:${c.orgId}` : `ip:${request.ip}`;
}

/**
 * Any other media type than JSON: a route that takes a body answers 400 at once, whatever the body's size,
 * and reads none of it (spec item 5: only JSON; fastify closes the connection after a parser's refusal). A
 * route that takes none (cancel, reads) drops what a client sent anyway, up to the small-body size; more is
 * 413 saying so (the 25 MiB message would be false for it).
 */
function otherMediaType(
  request: FastifyRequest,
  payload: NodeJS.ReadableStream,
  done: (error: Error | null, body?: unknown) => void,
): void {
  if (request.routeOptions.schema?.body) {
    const error = new Error('media type') as Error & { code: string; statusCode: number };
    error.code = 'FST_ERR_CTP_INVALID_MEDIA_TYPE';
    error.statusCode = 415;
    done(error, undefined);
    return;
  }
  const tooLarge = () =>
    new PublicHttpError(
      'payload_too_large',
      `This request takes no body; one over ${SMALL_BODY_BYTES.toLocaleString('en-US')} bytes is refused.`,
    );
  if (Number(request.headers['content-length']) > SMALL_BODY_BYTES) {
    done(tooLarge(), undefined);
    return;
  }
  let received = 0;
  const stop = () => {
    payload.off('data', onData);
    payload.off('end', onEnd);
    payload.off('error', onEnd);
  };
  const onData = (chunk: Buffer | string) => {
    received += chunk.length;
    if (received <= SMALL_BODY_BYTES) return;
    stop();
    done(tooLarge(), undefined);
  };
  const onEnd = (error?: Error) => {
    stop();
    done(error ?? null, undefined);
  };
  payload.on('data', onData);
  payload.on('end', onEnd);
  payload.on('error', onEnd);
  payload.resume();
}

/**
 * The gateway's own bounds on what a request may cost it (issue 15): memory per request admitted
 * against a budget before the body is read, JSON nesting limited before it is parsed. Timeouts on
 * headers, body and silent sockets are server options (app.ts). Registered after authentication, so
 * an unknown key never takes a place in the budget.
 */
export const requestBounds = fp(
  async (app: FastifyInstance, opts: RequestBoundsOptions) => {
    const budget = new BodyBudget(opts.budgetBytes);
    app.decorateRequest('jsonBytes', undefined);
    app.decorateRequest('bodyPhones', undefined);
    app.decorateRequest('closeAfterAnswer', undefined);
    app.decorateRequest('bodyReadFrom', 0);
    app.decorateRequest('uploadMs', 0);
    budgetGauge(budget, opts.metrics);

    app.addHook('preParsing', async (request, reply, payload) => {
      // No route: the answer is the path's 404, or 405 with `Allow` (spec: "unsupported method"), whatever
      // the body, of any media type, size and method. The body is never read: every parser is given an
      // empty one (and no declared length to hold it to), it takes no place in the budget, and the answer
      // closes the connection, lingering (onSend below).
      if (request.is404 && hasBody(request)) {
        request.closeAfterAnswer = true;
        delete request.headers['content-length'];
        return Readable.from([]);
      }
      if (request.method !== 'POST' && request.method !== 'PUT' && request.method !== 'PATCH') return payload;
      const declared = declaredLength(request);
      request.bodyReadFrom = Date.now();
      // Small bodies take no place; one declared over the limit is refused (413) by the body parser before a
      // byte is read, so it waits for no room (it was a 503 after the wait while large bodies held the budget).
      if (declared <= SMALL_BODY_BYTES || declared > LIMITS.maxBodyBytes) return payload;
      const release = await budget.acquire(ownerOf(request), declared * HEAP_PER_BODY_BYTE, opts.waitMs);
      if (!release) {
        // Not a platform fault the client caused: try again shortly, as for any 503.
        throw new PublicHttpError(
          'platform_failure',
          'The service is busy with large requests; retry shortly.',
          2,
        );
      }
      reply.raw.once('close', release);
      request.bodyReadFrom = Date.now();
      return payload;
    });

    // Fastify closes the connection after refusing a body it has not read (413 on the declared length,
    // 415): such an answer closes lingering (lingering-close.ts).
    app.addHook('onSend', async (request, reply, payload) => {
      if (request.closeAfterAnswer) reply.header('connection', 'close');
      if (!request.raw.complete && reply.getHeader('connection') === 'close') {
        opts.lingering.afterAnswer(request.raw.socket);
      }
      return payload;
    });
    app.addHook('preClose', async () => opts.lingering.close());

    app.addContentTypeParser('*', otherMediaType);

    // JSON bodies: UTF-8 and nesting checked on the bytes before the parse; prototype keys refused as before.
    app.removeContentTypeParser('application/json');
    app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body, done) => {
      // Called once the whole body has arrived: the client's upload ends here, the checks below are ours.
      if (request.bodyReadFrom > 0) request.uploadMs = Date.now() - request.bodyReadFrom;
      // A route that takes no body (cancel, reads, the 404/405 answers) ignores one sent anyway.
      if (!request.routeOptions.schema?.body) {
        done(null, undefined);
        return;
      }
      // RFC 9110 8.4: a coded body is the coding's bytes, and the service decodes none (the 25 MiB limits
      // are on the bytes as sent). Read as JSON it would fail, or pass when the header was false.
      if (hasContentCoding(request.headers['content-encoding'])) {
        done(
          new PublicHttpError(
            'validation_error',
            'Content-Encoding is not supported: send the JSON body uncompressed.',
          ),
          undefined,
        );
        return;
      }
      const bytes = body as Buffer;
      // JSON between systems is UTF-8 (RFC 8259, 8.1). Other bytes would be decoded to U+FFFD, and the
      // answer would hold strings the client never sent (spec: the original input strings).
      if (!isUtf8(bytes)) {
        done(new PublicHttpError('validation_error', 'The body is not valid UTF-8.'), undefined);
        return;
      }
      const config = request.routeOptions.config;
      // A scrub body read in place: the route's schema still judges what it holds but the phones (an
      // empty array stands for them); the byte reader has held each phone to the schema's rules already.
      const read = config.phonesFromBytes ? readScrubBody(bytes, config.phonesFromBytes) : undefined;
      if (read) {
        if (config.keepJsonBytes) request.jsonBytes = bytes;
        request.bodyPhones = read.phones;
        done(null, { country: read.country, phones: [] });
        return;
      }
      if (nestsDeeperThan(bytes, MAX_JSON_DEPTH)) {
        done(
          new PublicHttpError('validation_error', `The body nests deeper than ${MAX_JSON_DEPTH} levels.`),
          undefined,
        );
        return;
      }
      try {
        const parsed = secureJson.parse(bytes.toString('utf8'), undefined, {
          protoAction: 'error',
          constructorAction: 'error',
        });
        if (config.keepJsonBytes) request.jsonBytes = bytes;
        done(null, parsed);
      } catch {
        const error = new Error('invalid JSON') as Error & { statusCode: number };
        error.statusCode = 400;
        done(error, undefined);
      }
    });
  },
  { name: 'request-bounds', dependencies: ['authentication'] },
);
