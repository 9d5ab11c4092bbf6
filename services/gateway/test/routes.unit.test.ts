import { create } from '@bufbuild/protobuf';
import { OPERATION_ERRORS } from '@dnc/api-contract';
import { buildScrubResult, Code, createLogger, HealthState, publicError, Registry } from '@dnc/kit';
import { admissionv1, jobsv1, registryv1 } from '@dnc/proto';
import type { FastifyInstance } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { JOB_FIELDS } from '../../../test/support/job-resource.js';
import { buildApp } from '../src/app.js';
import { gatewayConfig } from '../src/config.js';
import { StopClock } from '../src/deadline.js';
import { RATE_LIMIT_HEADERS } from '../src/errors.js';
import { fingerprint } from '../src/fingerprint.js';
import { testGateway } from './support/gateway.js';
import { inMemoryUpstream, job, OUTCOME_CYCLE, type Script } from './support/upstream.js';

const rate = () =>
  create(admissionv1.RateLimitInfoSchema, { limit: 60, remaining: 41, resetUnix: 1_800_000_000n });

const apps: FastifyInstance[] = [];
afterEach(async () => {
  for (const app of apps.splice(0)) await app.close();
});

async function gateway(script: Script) {
  const g = await testGateway(script);
  apps.push(g.app);
  return g;
}

/** POST one phone of mx to `url` with a key, and the Idempotency-Key when given. */
function scrub(g: { app: FastifyInstance }, url: '/v1/scrub' | '/v2/scrub', idempotencyKey?: string) {
  return g.app.inject({
    method: 'POST',
    url,
    headers: {
      authorization: 'Bearer dnc_test_key',
      ...(idempotencyKey ? { 'idempotency-key': idempotencyKey } : {}),
    },
    payload: { country: 'mx', phones: ['5512345678'] },
  });
}

/** POST `payload` as a JSON body to `url`, with Idempotency-Key `k`. */
function postBody(
  g: { app: FastifyInstance },
  url: string,
  payload: string | Buffer,
  authorization = 'Bearer dnc_test_key',
) {
  return g.app.inject({
    method: 'POST',
    url,
    headers: { authorization, 'idempotency-key': 'k', 'content-type': 'application/json' },
    payload,
  });
}

describe('gateway routes over the in-memory upstream (routes translate HTTP; the flows decide)', () => {
  it('POST /v1/scrub: a small body is authenticated by Admit (no Authenticate call) and carries its rate-limit headers', async () => {
    const g = await gateway({ admit: () => ({ rateLimit: rate() }) });
    const r = await scrub(g, '/v1/scrub', 'k1');
    expect(r.statusCode).toBe(200);
    expect(r.json()).toMatchObject({ safe_numbers_to_call: ['5512345678'] });
    expect(r.headers['x-ratelimit-remaining']).toBe('41');
    expect(r.headers['ratelimit-limit']).toBe('60');
    expect(r.headers['idempotency-replayed']).toBeUndefined();
    expect(r.headers['x-retention']).toBe('zero');
    expect(g.calls.filter((c) => c === 'authenticate')).toEqual([]);
  });

  it('POST /v1/scrub refused before Admit (no Idempotency-Key): authenticated first, exactly once, then 400', async () => {
    const g = await gateway({});
    const r = await scrub(g, '/v1/scrub');
    expect(r.statusCode).toBe(400);
    expect(r.json()).toEqual({
      error: 'validation_error',
      message: 'The Idempotency-Key header is required.',
    });
    expect(g.calls).toEqual(['authenticate']);
  });

  it('POST /v1/scrub refused by Admit: the rate-limit headers of the refusal, no second authentication', async () => {
    const g = await gateway({
      admit: () =>
        publicError(Code.PermissionDenied, 'country_not_in_plan', {
          details: [{ desc: admissionv1.RateLimitInfoSchema, value: rate() }],
        }),
    });
    const r = await scrub(g, '/v1/scrub', 'k1');
    expect(r.statusCode).toBe(403);
    expect(r.json()).toEqual({ error: 'country_not_in_plan' });
    expect(r.headers['x-ratelimit-remaining']).toBe('41');
    expect(g.calls).toEqual(['admit k1']);
  });

  // Spec, Authentication 3: "A 401 response carries x-retention but no rate-limit headers", also when the
  // key was accepted as the request arrived and revoked before its (slow) body had (admission.Admit's 401).
  it('POST /v2/scrub whose key is revoked by the time Admit runs: 401 without the rate-limit headers', async () => {
    const admitted = await gateway({ rateLimit: rate() });
    expect((await scrub(admitted, '/v2/scrub', 'k-before')).headers['x-ratelimit-remaining']).toBe('41');
    const g = await gateway({
      rateLimit: rate(),
      admit: () => publicError(Code.Unauthenticated, 'invalid_key'),
    });
    const r = await scrub(g, '/v2/scrub', 'k-revoked');
    expect([r.statusCode, r.json()]).toEqual([401, { error: 'invalid_key' }]);
    for (const name of RATE_LIMIT_HEADERS) expect(r.headers[name]).toBeUndefined();
    expect(r.headers['x-retention']).toBeDefined();
    expect(g.calls).toEqual(['authenticate', 'admit k-revoked']);
  });

  it('POST /v1/scrub replayed: Idempotency-Replayed: true', async () => {
    const g = await gateway({ admit: () => ({ replay: true }) });
    const r = await scrub(g, '/v1/scrub', 'k1');
    expect(r.statusCode).toBe(200);
    expect(r.headers['idempotency-replayed']).toBe('true');
  });

  it('POST /v2/scrub: authenticated before the body, 202 with the job resource; a terminal replay is 200', async () => {
    const g = await gateway({});
    const r = await scrub(g, '/v2/scrub', 'k2');
    expect(r.statusCode).toBe(202);
    const body = r.json();
    expect(body).toMatchObject({ status: 'queued', country: 'mx', submitted_count: 1 });
    expect(body.status_url).toBe(`https://api.example.test/v2/scrub/${body.job_id}`);
    expect(r.headers['x-retention']).toBe('transient-encrypted');
    expect(g.calls[0]).toBe('authenticate');

    const again = await gateway({
      admit: () => ({ replay: true }),
      getJob: () => job('0b0b0b0b-0000-4000-8000-00000000000f', jobsv1.JobStatus.SUCCEEDED),
    });
    const replay = await scrub(again, '/v2/scrub', 'k2');
    expect(replay.statusCode).toBe(200);
    expect(replay.headers['idempotency-replayed']).toBe('true');
    expect(replay.json()).toMatchObject({ status: 'succeeded' });
  });
});

// A v2 body still arriving when the gateway was told to stop can outlast its shutdown bound (the upload is
// left out of the admission budget, up to 45 s): its calls must end inside the bound, or not be made, never
// be cut off halfway by the process's exit.
describe('POST /v2/scrub on a stopping gateway (StopClock)', () => {
  it('past the bound: 503 platform_failure with Retry-After, authenticated but nothing admitted', async () => {
    const stopping = new StopClock();
    const g = await testGateway({}, {}, { stopping });
    apps.push(g.app);
    stopping.begin(StopClock.ANSWER_MARGIN_MS); // the bound is now
    const r = await scrub(g, '/v2/scrub', 'k-stopping');
    expect([r.statusCode, r.json().error, r.headers['retry-after']]).toEqual([503, 'platform_failure', '1']);
    // Said for what it is: the instance stops (not an upload too slow).
    expect(r.json().message).toMatch(/shutting down; send it again with the same Idempotency-Key/);
    expect(g.calls).toEqual(['authenticate']);
  });

  it('inside the bound: admitted as ever', async () => {
    const stopping = new StopClock();
    const g = await testGateway({}, {}, { stopping });
    apps.push(g.app);
    stopping.begin(20_000);
    const r = await scrub(g, '/v2/scrub', 'k-stopping-later');
    expect(r.statusCode).toBe(202);
  });
});

// Found by a spec audit (2026-12-05): the response schemas listed `status` (and so serialized it) after
// `expires_at`. The spec's Job resource table orders the fields job_id, status, country, ...; a client that
// compares the text of a resource, or reads it as a stream, sees them in that order.
describe('the job resource (spec, Job resource): its fields in the order of the spec', () => {
  const ID = '0b0b0b0b-0000-4000-8000-00000000000e';
  it('202 at admission and the status resource (its error last)', async () => {
    const accepted = await scrub(await gateway({}), '/v2/scrub', 'k-order');
    expect(accepted.statusCode).toBe(202);
    expect(Object.keys(accepted.json())).toEqual(JOB_FIELDS);

    const failed = job(ID, jobsv1.JobStatus.FAILED);
    failed.error = create(jobsv1.JobErrorSchema, { error: 'platform_failure' });
    const g = await gateway({ getJob: () => failed });
    const status = await g.app.inject({
      method: 'GET',
      url: `/v2/scrub/${ID}`,
      headers: { authorization: 'Bearer dnc_test_key' },
    });
    expect(status.statusCode).toBe(200);
    expect(Object.keys(status.json())).toEqual([...JOB_FIELDS, 'error']);
    // The cancel answer is serialized by the same schema (routes/v2.ts).
  });
});

// Found by an OpenAPI review (2026-12-03): cancel answers 413 to a body it does not take (over 64 KiB), and
// the document did not list 413 for it: a validator of live answers against the document failed there.
describe('POST /v2/scrub/{job_id}/cancel with a body it does not take', () => {
  it('a small body is ignored; one over 64 KiB is 413 payload_too_large, as documented', async () => {
    const g = await gateway({});
    const url = '/v2/scrub/2c0f4a52-6a3e-4bb4-8f0d-2a9e5f6a1b7c/cancel';
    const send = (payload: string) =>
      g.app.inject({
        method: 'POST',
        url,
        headers: { authorization: 'Bearer dnc_test_key', 'content-type': 'text/plain' },
        payload,
      });
    expect((await send('x')).statusCode).not.toBe(413);
    const big = await send('x'.repeat(65 * 1024));
    expect([big.statusCode, big.json().error]).toEqual([413, 'payload_too_large']);
    const documented = OPERATION_ERRORS.cancelScrubJob as Record<number, readonly string[]>;
    expect(documented[413]).toEqual(['payload_too_large']);
  });
});

describe('POST /v2/scrub: a body read in place from its bytes or parsed is the same request', () => {
  const phones = ['+525512345678', '55 1234 5678', '(55) 1234-5678', 'x'.repeat(64), ''];
  /** The same phones, written compactly (read in place) and with spaces in the array (parsed). */
  const bodies = [
    JSON.stringify({ country: 'mx', phones }),
    `{ "phones": [ ${phones.map((p) => JSON.stringify(p)).join(' , ')} ], "country": "mx" }`,
  ];

  async function post(payload: string) {
    const admitted: admissionv1.AdmitRequest[] = [];
    const submitted: jobsv1.SubmitJobRequest[] = [];
    const g = await gateway({
      admit: (req) => {
        admitted.push(req);
        return {};
      },
      submitJob: (req) => {
        submitted.push(req);
        return job(req.jobId);
      },
    });
    const r = await g.app.inject({
      method: 'POST',
      url: '/v2/scrub',
      headers: {
        authorization: 'Bearer dnc_test_key',
        'idempotency-key': 'same',
        'content-type': 'application/json',
      },
      payload,
    });
    return { r, admitted, submitted };
  }

  it('the same fingerprint, count and durable input (an exact retry in the other spelling replays)', async () => {
    const [compact, spaced] = [await post(bodies[0] as string), await post(bodies[1] as string)];
    for (const { r } of [compact, spaced]) expect(r.statusCode).toBe(202);
    const sent = ({ admitted, submitted }: typeof compact) => ({
      fingerprint: admitted[0]?.fingerprint,
      inputCount: admitted[0]?.inputCount,
      resultRules: admitted[0]?.resultRules,
      canonical: Buffer.from(submitted[0]?.canonicalPhones ?? []).toString('utf8'),
    });
    expect(sent(compact)).toEqual(sent(spaced));
    expect(sent(compact)).toEqual({
      fingerprint: fingerprint('test-secret-0123456789', 'v1', 'mx', phones),
      inputCount: phones.length,
      resultRules: '',
      canonical: JSON.stringify(phones),
    });
  });

  it('the schema still judges a body read in place: an unknown country is the same 400 either way', async () => {
    const answers = [];
    for (const text of bodies) {
      const { r, admitted } = await post(text.replace('"mx"', '"zz"'));
      expect(r.statusCode).toBe(400);
      expect(admitted).toEqual([]);
      answers.push(r.body);
    }
    expect(answers[0]).toBe(answers[1]);
    expect(JSON.parse(answers[0] as string)).toMatchObject({ error: 'validation_error' });
  });

  it('a phone over the limit is left to the parse and the schema: 400', async () => {
    const { r, admitted } = await post(JSON.stringify({ country: 'mx', phones: ['1', 'x'.repeat(65)] }));
    expect(r.statusCode).toBe(400);
    expect(r.json()).toMatchObject({ error: 'validation_error' });
    expect(admitted).toEqual([]);
  });
});

describe('POST /v1/scrub: a body read in place from its bytes or parsed is the same request', () => {
  const { Outcome } = registryv1;
  const cycle = OUTCOME_CYCLE;
  const few = ['+525512345678', '55 1234 5678', '(55) 1234-5678', 'x'.repeat(64), ''];
  // Over CHECK_SHARE_MAX_INPUTS: its Check goes alone, as the body's bytes (phone_list).
  const many = Array.from({ length: 300 }, (_, i) =>
    i % 7 === 0 ? `55 ${1000_0000 + i}` : `+52551${1000000 + i}`,
  );

  /** The same phones, written compactly (read in place) and with spaces in the array (parsed). */
  const bodies = (phones: string[]) => [
    JSON.stringify({ country: 'mx', phones }),
    `{ "phones": [ ${phones.map((p) => JSON.stringify(p)).join(' , ')} ], "country": "mx" }`,
  ];

  async function post(payload: string) {
    const admitted: admissionv1.AdmitRequest[] = [];
    const g = await gateway({
      admit: (req) => {
        admitted.push(req);
        return {};
      },
      check: (count) => Array.from({ length: count }, (_, i) => cycle[i % cycle.length]!),
    });
    const r = await g.app.inject({
      method: 'POST',
      url: '/v1/scrub',
      headers: {
        authorization: 'Bearer dnc_test_key',
        'idempotency-key': 'same',
        'content-type': 'application/json',
      },
      payload,
    });
    return { r, admitted, checked: g.checked };
  }

  it('the same fingerprint and count, the same phones checked, the same answer byte for byte', async () => {
    for (const phones of [few, many]) {
      const [compact, spaced] = [await post(bodies(phones)[0]!), await post(bodies(phones)[1]!)];
      for (const { r } of [compact, spaced]) expect(r.statusCode).toBe(200);
      expect(compact.admitted[0]?.fingerprint).toBe(
        fingerprint('test-secret-0123456789', 'v1', 'mx', phones),
      );
      expect(spaced.admitted[0]?.fingerprint).toBe(compact.admitted[0]?.fingerprint);
      expect([compact.admitted[0]?.inputCount, spaced.admitted[0]?.inputCount]).toEqual([
        phones.length,
        phones.length,
      ]);
      expect(compact.checked).toEqual([phones]);
      expect(spaced.checked).toEqual([phones]);
      const outcomes = phones.map((_, i) => cycle[i % cycle.length]!);
      expect(compact.r.body).toBe(JSON.stringify(buildScrubResult(phones, outcomes)));
      expect(spaced.r.body).toBe(compact.r.body);
    }
  });

  it('an answer that misses an outcome is never a result: 503 either way, nothing of it answered', async () => {
    for (const text of bodies(few)) {
      const g = await gateway({ check: (count) => Array.from({ length: count - 1 }, () => Outcome.SAFE) });
      const r = await postBody(g, '/v1/scrub', text);
      expect(r.statusCode).toBe(503);
      expect(r.json()).toMatchObject({ error: 'country_service_temporarily_unavailable' });
      expect(r.body).not.toContain('5512345678');
      expect(g.calls.some((c) => c.startsWith('abort '))).toBe(true);
    }
  });

  it("10,001 phones are left to the parse and the schema: v1's maxItems answers its 413 as before", async () => {
    const phones = Array.from({ length: 10_001 }, () => '5512345678');
    const { r, admitted } = await post(JSON.stringify({ country: 'mx', phones }));
    expect(r.statusCode).toBe(413);
    expect(r.json()).toMatchObject({ error: 'payload_too_large' });
    expect(r.json().message).toContain('10,000');
    expect(admitted).toEqual([]);
  });
});

describe('the Authorization header (spec, Authentication 1 and 3; RFC 9110 11.1: the scheme is case-insensitive)', () => {
  async function keyPresented(authorization: string) {
    const admitted: admissionv1.AdmitRequest[] = [];
    const g = await gateway({
      admit: (req) => {
        admitted.push(req);
        return { rateLimit: rate() };
      },
    });
    await postBody(g, '/v1/scrub', JSON.stringify({ country: 'mx', phones: ['5512345678'] }), authorization);
    return admitted[0]?.credentials?.apiKey;
  }

  it.each(['Bearer dnc_test_key', 'bearer dnc_test_key', 'BEARER dnc_test_key', 'Bearer  dnc_test_key'])(
    '%j presents the key',
    async (authorization) => {
      expect(await keyPresented(authorization)).toBe('dnc_test_key');
    },
  );

  it.each([
    'Bearer',
    'Bearer ',
    'Bearerdnc_test_key',
    'Basic ZG5jX3Rlc3Rfa2V5',
    'Bearer dnc test key',
    'Token dnc_test_key',
  ])(
    '%j is malformed: no key presented (admission answers 401 invalid_key and counts the failure)',
    async (authorization) => {
      expect(await keyPresented(authorization)).toBe('');
    },
  );
});

describe('a body that is not UTF-8 (RFC 8259 8.1: JSON between systems is UTF-8)', () => {
  // Spec, ScrubResult: "Response arrays hold the original input strings". Decoded, these bytes would be
  // U+FFFD, and the answer would list strings the client never sent.
  const bad = [
    Buffer.from([0xff]),
    Buffer.from([0xc3, 0x28]),
    Buffer.from([0xc0, 0xaf]), // an overlong '/'
    Buffer.from([0xed, 0xa0, 0x80]), // a surrogate, encoded as if it were a character
    Buffer.from([0xe2, 0x82]), // a character cut short
  ];
  const bodies = (phone: Buffer) => [
    // Compact (read in place from the bytes) and with spaces (parsed): refused alike.
    Buffer.concat([Buffer.from('{"country":"mx","phones":["5512345678","55'), phone, Buffer.from('12"]}')]),
    Buffer.concat([Buffer.from('{ "country": "mx", "phones": [ "55'), phone, Buffer.from('12" ] }')]),
  ];

  it.each(['/v1/scrub', '/v2/scrub'])(
    '%s: 400 validation_error before Admit, nothing of the body echoed',
    async (url) => {
      for (const phone of bad) {
        for (const payload of bodies(phone)) {
          const g = await gateway({ admit: () => ({ rateLimit: rate() }) });
          const r = await postBody(g, url, payload);
          expect(r.statusCode).toBe(400);
          expect(r.json()).toEqual({ error: 'validation_error', message: 'The body is not valid UTF-8.' });
          expect(r.headers['x-retention']).toBe(url === '/v1/scrub' ? 'zero' : 'transient-encrypted');
          expect(r.body).not.toContain('5512345678');
          expect(g.calls.filter((c) => c.startsWith('admit'))).toEqual([]);
        }
      }
    },
  );

  it('valid UTF-8 beyond ASCII is accepted and answered as sent', async () => {
    const phones = ['55 1234 5678', '\u00a055\u00a01234\u00a05678', '\uff15\uff15', '\u{1f4de}'];
    const g = await gateway({ admit: () => ({ rateLimit: rate() }) });
    const payload = Buffer.from(JSON.stringify({ country: 'mx', phones }), 'utf8');
    const r = await postBody(g, '/v1/scrub', payload);
    expect(r.statusCode).toBe(200);
    expect(r.json().safe_numbers_to_call).toEqual(phones);
  });
});

describe('a fingerprint secret rotation (issue 14 item 4)', () => {
  it('Admit carries the fingerprint of the current and of the previous version, v1 and v2 alike', async () => {
    const seen: admissionv1.AdmitRequest[] = [];
    const u = inMemoryUpstream({
      admit: (req) => {
        seen.push(req);
        return {};
      },
    });
    const logger = createLogger('gateway-test', 'silent');
    const app = await buildApp({
      config: gatewayConfig.parse({
        DNC_FINGERPRINT_SECRET: 'new-secret-0123456789',
        DNC_FINGERPRINT_VERSION: 'v2',
        DNC_FINGERPRINT_PREVIOUS_SECRET: 'test-secret-0123456789',
        DNC_FINGERPRINT_PREVIOUS_VERSION: 'v1',
      }),
      upstream: u.upstream,
      health: new HealthState(logger),
      logger,
      metrics: new Registry(),
    });
    apps.push(app);
    await scrub({ app }, '/v1/scrub', 'rotated-v1');
    await scrub({ app }, '/v2/scrub', 'rotated-v2');
    const expectedPrevious = fingerprint('test-secret-0123456789', 'v1', 'mx', ['5512345678']);
    expect(seen.map((r) => r.fingerprint)).toEqual([
      fingerprint('new-secret-0123456789', 'v2', 'mx', ['5512345678']),
      fingerprint('new-secret-0123456789', 'v2', 'mx', ['5512345678']),
    ]);
    expect(seen.map((r) => r.previousFingerprints)).toEqual([[expectedPrevious], [expectedPrevious]]);
  });
});
