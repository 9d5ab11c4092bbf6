import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  DncApiError,
  DncClient,
  DncConnectionError,
  DncTimeoutError,
  ERROR_CODES,
  type ErrorCode,
  type ResponseInfo,
  SDK_VERSION,
} from '../src/index.js';
import { sequence, startScriptedServer } from './scripted-server.js';

/** The error a promise rejects with (fails the test when it resolves). */
async function rejection<E = Error>(promise: Promise<unknown>): Promise<E> {
  try {
    await promise;
  } catch (error) {
    return error as E;
  }
  throw new Error('expected a rejection');
}

const result = {
  prohibited_numbers_to_call: [],
  safe_numbers_to_call: ['3109999999'],
  invalid_numbers: [],
  summary: { total_checked: 1, prohibited_numbers: 0, safe_numbers: 1, invalid_numbers: 0 },
};
const request = { country: 'co' as const, phones: ['3109999999'] };
const UUID_OF_JOB = '2c0f4a52-6a3e-4bb4-8f0d-2a9e5f6a1b7c';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

let server: Awaited<ReturnType<typeof startScriptedServer>> | undefined;
afterEach(async () => {
  vi.restoreAllMocks();
  await server?.close();
  server = undefined;
});

async function clientFor(script: Parameters<typeof startScriptedServer>[0], extra: object = {}) {
  server = await startScriptedServer(script);
  const client = new DncClient({
    apiKey: 'k',
    baseUrl: server.baseUrl,
    retryBaseDelayMs: 10,
    retryMaxDelayMs: 40,
    ...extra,
  });
  return { client, calls: server.calls };
}

describe('retries through an ingress (502/504 as 503, same Idempotency-Key)', () => {
  it('a 502 page and a 504 are retried with the same key, then the result is returned', async () => {
    const { client, calls } = await clientFor(
      sequence(
        { status: 502, body: undefined, headers: { 'content-type': 'text/html' } },
        { status: 504, body: undefined },
        { status: 200, body: result },
      ),
    );
    await expect(client.scrub(request)).resolves.toEqual(result);
    expect(calls).toHaveLength(3);
    expect(new Set(calls.map((c) => c.headers['idempotency-key'])).size).toBe(1);
  });

  it('a 502 that persists ends as DncApiError unexpected_response after maxRetries', async () => {
    const { client, calls } = await clientFor(sequence({ status: 502, body: undefined }), { maxRetries: 2 });
    await expect(client.scrub(request)).rejects.toMatchObject({ status: 502, code: 'unexpected_response' });
    expect(calls).toHaveLength(3);
  });
});

describe('request ids', () => {
  it("sends a fresh X-Request-Id per attempt and reports the answer's on every error", async () => {
    const { client, calls } = await clientFor(
      sequence({ status: 400, body: { error: 'validation_error' }, headers: { 'x-request-id': 'srv-id-1' } }),
    );
    const error = await rejection<DncApiError>(client.scrub(request));
    expect(error).toBeInstanceOf(DncApiError);
    expect(error.requestId).toBe('srv-id-1');
    expect(calls[0]?.headers['x-request-id']).toMatch(UUID);
  });

  it('without an X-Request-Id in the answer, the error carries the one that was sent', async () => {
    const { client, calls } = await clientFor(sequence({ status: 401, body: { error: 'invalid_key' } }));
    const error = await rejection<DncApiError>(client.jobs.get('x'));
    expect(error.code).toBe('invalid_key');
    expect(error.requestId).toBe(calls[0]?.headers['x-request-id']);
  });

  it('a connection failure carries the request id of the last attempt', async () => {
    const { client, calls } = await clientFor(sequence({ drop: true }), { maxRetries: 1 });
    const error = await rejection<DncConnectionError>(client.scrub(request));
    expect(error).toBeInstanceOf(DncConnectionError);
    expect(calls).toHaveLength(2);
    expect(calls[0]?.headers['x-request-id']).not.toBe(calls[1]?.headers['x-request-id']);
    expect(error.requestId).toBe(calls[1]?.headers['x-request-id']);
  });

  it('onResponse sees the status, request id and headers of every answer of the call', async () => {
    const { client } = await clientFor(
      sequence(
        { status: 503, body: { error: 'platform_failure' }, headers: { 'x-request-id': 'a' } },
        { status: 200, body: result, headers: { 'x-request-id': 'b' } },
      ),
    );
    const seen: ResponseInfo[] = [];
    await client.scrub(request, { onResponse: (info) => seen.push(info) });
    expect(seen.map((s) => [s.status, s.requestId])).toEqual([
      [503, 'a'],
      [200, 'b'],
    ]);
  });
});

describe("error codes are the contract's union", () => {
  it('every documented code comes through as itself; an unknown one as unexpected_response', async () => {
    const codes = Object.keys(ERROR_CODES) as ErrorCode[];
    let n = 0;
    const { client } = await clientFor(
      () => {
        const code = codes[n++] ?? 'made_up_code';
        return { status: code === 'made_up_code' ? 418 : 400, body: { error: code } };
      },
      { maxRetries: 0 },
    );
    for (const code of codes) {
      await expect(client.jobs.get('x')).rejects.toMatchObject({ code });
    }
    await expect(client.jobs.get('x')).rejects.toMatchObject({ status: 418, code: 'unexpected_response' });
  });
});

describe('per-call timeout', () => {
  it('bounds the whole call, retries and Retry-After waits included: DncTimeoutError with the request id', async () => {
    const { client, calls } = await clientFor(
      sequence({ status: 503, body: { error: 'platform_failure' }, headers: { 'retry-after': '1' } }),
    );
    const started = Date.now();
    const error = await rejection<DncTimeoutError>(client.scrub(request, { timeoutMs: 300 }));
    expect(error).toBeInstanceOf(DncTimeoutError);
    expect(error.code).toBe('timeout');
    expect(error.requestId).toBe(calls[0]?.headers['x-request-id']);
    expect(Date.now() - started).toBeLessThan(900);
    expect(calls).toHaveLength(1);
  });

  it('a slow answer is cut at the call timeout', async () => {
    server = await startScriptedServer(() => ({ status: 200, body: result }));
    // A server that takes 5 s to answer (the fetch honors the abort as a real one does).
    const slowFetch: typeof fetch = async (input, init) => {
      await new Promise((resolve, reject) => {
        const timer = setTimeout(resolve, 5_000);
        init?.signal?.addEventListener('abort', () => {
          clearTimeout(timer);
          reject(init.signal?.reason);
        });
      });
      return fetch(input, init);
    };
    const client = new DncClient({ apiKey: 'k', baseUrl: server.baseUrl, fetch: slowFetch });
    const started = Date.now();
    await expect(client.jobs.get('x', { timeoutMs: 200 })).rejects.toBeInstanceOf(DncTimeoutError);
    expect(Date.now() - started).toBeLessThan(1_000);
  });
});

describe('randomness comes only from the injected source', () => {
  it('retries and polling never call Math.random when `random` is given', async () => {
    const spy = vi.spyOn(Math, 'random').mockImplementation(() => {
      throw new Error('Math.random used');
    });
    let polls = 0;
    const injected = vi.fn(() => 0.5);
    const { client } = await clientFor(
      (call) => {
        if (call.method === 'POST')
          return polls++ === 0
            ? { status: 503, body: { error: 'platform_failure' } }
            : {
                status: 202,
                body: { job_id: 'j', status: 'queued' },
              };
        return { status: 200, body: { job_id: 'j', status: polls++ < 3 ? 'running' : 'succeeded' } };
      },
      { random: injected },
    );
    await client.jobs.create(request);
    await client.jobs.wait('j', { pollIntervalMs: 10 });
    expect(spy).not.toHaveBeenCalled();
    expect(injected).toHaveBeenCalled();
  });

  it('the source of the SDK has no Math.random outside the default of `random`', () => {
    const files = ['client.ts', 'transport.ts', 'retry.ts', 'errors.ts'];
    const uses = files.flatMap((f) =>
      readFileSync(new URL(`../src/${f}`, import.meta.url), 'utf8')
        .split('\n')
        .filter((line) => line.includes('Math.random') && !/^\s*(\*|\/\/|\/\*)/.test(line))
        .map((line) => `${f}: ${line.trim()}`),
    );
    expect(uses).toEqual(['client.ts: random: options.random ?? Math.random,']);
  });
});

describe('an outcome left unknown can be retried safely (the key is on the error)', () => {
  it('DncConnectionError, DncTimeoutError and DncApiError of a POST carry its Idempotency-Key; a GET carries none', async () => {
    // Admitted, then every answer lost: a retry must reuse the key the SDK generated, or it is charged twice.
    const dropped = await clientFor(sequence({ drop: true }), { maxRetries: 1 });
    const lost = await rejection<DncConnectionError>(dropped.client.jobs.create(request));
    expect(lost).toBeInstanceOf(DncConnectionError);
    expect(lost.idempotencyKey).toMatch(UUID);
    expect(dropped.calls.map((c) => c.headers['idempotency-key'])).toEqual([
      lost.idempotencyKey,
      lost.idempotencyKey,
    ]);
    await server!.close();

    const busy = await clientFor(sequence({ status: 503, body: { error: 'platform_failure' } }), {
      maxRetries: 0,
    });
    const refused = await rejection<DncApiError>(busy.client.scrub(request, { idempotencyKey: 'order-42' }));
    expect(refused).toMatchObject({ code: 'platform_failure', idempotencyKey: 'order-42' });
    await server!.close();

    // The call's bound passes while the SDK waits on a Retry-After.
    const slow = await clientFor(
      sequence({ status: 503, body: { error: 'platform_failure' }, headers: { 'retry-after': '5' } }),
    );
    const late = await rejection<DncTimeoutError>(slow.client.scrub(request, { timeoutMs: 100 }));
    expect(late).toBeInstanceOf(DncTimeoutError);
    expect(late.idempotencyKey).toMatch(UUID);
    expect(late.message).not.toContain(late.idempotencyKey!);
    await server!.close();

    const missing = await clientFor(sequence({ status: 404, body: { error: 'job_not_found' } }));
    expect(await rejection<DncApiError>(missing.client.jobs.get(UUID_OF_JOB))).toMatchObject({
      code: 'job_not_found',
      idempotencyKey: undefined,
    });
  });
});

describe('the API key is checked before it is sent', () => {
  it('a key with a line break or a space is refused at construction, without echoing it, and nothing is sent', async () => {
    server = await startScriptedServer(sequence({ status: 200, body: result }));
    for (const apiKey of [
      'sk_live_SECRET\n#comment',
      'sk_live_SECRET ',
      ' sk_live_SECRET',
      'sk_live_SECR\u00e9T',
    ]) {
      const error = (() => {
        try {
          new DncClient({ apiKey, baseUrl: server!.baseUrl });
        } catch (e) {
          return e as Error;
        }
        return undefined;
      })();
      expect(error).toBeInstanceOf(TypeError);
      expect(error!.message).not.toContain('SECR');
      expect(String(error!.cause ?? '')).not.toContain('SECR');
    }
    expect(server.calls).toHaveLength(0);
  });
});

// Found by a review (2026-12-03): any baseUrl was taken, and the default is a local address: an integrator
// who wrote http:// for a production host (or a proxy) sent the API key across the network in clear.
describe('the API key travels in clear to this machine only', () => {
  const refusal = (options: ConstructorParameters<typeof DncClient>[0]) => {
    try {
      new DncClient(options);
    } catch (e) {
      return e as Error;
    }
    return undefined;
  };
  it('http:// to another host is refused at construction, naming the host and never the key', () => {
    for (const baseUrl of ['http://api.example.com', 'http://10.0.0.7:8080/', 'HTTP://Api.Example.com:80']) {
      const error = refusal({ apiKey: 'sk_live_SECRET', baseUrl });
      expect(error, baseUrl).toBeInstanceOf(TypeError);
      expect(error!.message).toMatch(/in clear/);
      expect(error!.message).not.toContain('SECRET');
    }
    for (const baseUrl of ['ftp://api.example.com', 'api.example.com', 'file:///etc/passwd'])
      expect(refusal({ apiKey: 'k', baseUrl }), baseUrl).toBeInstanceOf(TypeError);
  });
  it('a base URL with a user name or password is refused, never echoed (fetch refuses it; errors name the URL)', () => {
    for (const baseUrl of ['https://user:hunter2@api.example.com', 'https://hunter2@api.example.com']) {
      const error = refusal({ apiKey: 'k', baseUrl });
      expect(error, baseUrl).toBeInstanceOf(TypeError);
      expect(error!.message).toMatch(/user name or password/);
      expect(error!.message).not.toContain('hunter2');
    }
  });
  it('https:// anywhere, http:// to this machine, and http:// elsewhere when allowed are taken', () => {
    for (const baseUrl of [
      'https://api.example.com',
      'http://127.0.0.1:8080',
      'http://127.1.2.3:9',
      'http://localhost:8080/',
      'http://[::1]:8080',
      undefined,
    ])
      expect(refusal({ apiKey: 'k', ...(baseUrl ? { baseUrl } : {}) }), baseUrl).toBeUndefined();
    expect(refusal({ apiKey: 'k', baseUrl: 'http://gateway.internal:8080', allowInsecureHttp: true })).toBe(
      undefined,
    );
  });
});

describe('Retry-After and its limit', () => {
  it('a Retry-After equal to maxRetryAfterMs is waited for (the jitter does not push it over)', async () => {
    let waited = 0;
    const { client, calls } = await clientFor(
      sequence(
        { status: 429, body: { error: 'rate_limit_exceeded' }, headers: { 'retry-after': '1' } },
        { status: 200, body: result },
      ),
      { maxRetryAfterMs: 1_000, random: () => 0.999 },
    );
    const started = Date.now();
    await client.scrub(request);
    waited = Date.now() - started;
    expect(calls).toHaveLength(2);
    expect(waited).toBeGreaterThanOrEqual(1_000);
  });
});

describe('package', () => {
  it('SDK_VERSION is the package version', () => {
    const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
    expect(SDK_VERSION).toBe(pkg.version);
  });
});

// Found by a review (2026-12-04): every attempt was bounded as a whole by the client's timeoutMs (60 s), so
// a 25 MiB result on a link slower than 3.5 Mbit/s was cut, downloaded again from the start, cut again, and
// never delivered. A result download's attempt now waits timeoutMs for the headers and for each next piece.
describe('a result download on a slow link', () => {
  const big = {
    ...result,
    safe_numbers_to_call: Array.from({ length: 2_000 }, (_, i) => `310${String(i).padStart(7, '0')}`),
    summary: { total_checked: 2_000, prohibited_numbers: 0, safe_numbers: 2_000, invalid_numbers: 0 },
  };

  it('slow but steady, longer than the attempt timeout: read whole, in one call', async () => {
    const { client, calls } = await clientFor(
      sequence({ status: 200, body: big, trickle: { pieces: 10, gapMs: 200 } }),
      { timeoutMs: 1_000 },
    );
    const started = Date.now();
    expect(await client.jobs.result(UUID_OF_JOB)).toEqual(big);
    expect(Date.now() - started).toBeGreaterThan(1_700);
    expect(calls).toHaveLength(1);
  });

  it('stalled longer than the attempt timeout: that attempt is given up and the download retried', async () => {
    const { client, calls } = await clientFor(
      sequence(
        { status: 200, body: big, trickle: { pieces: 2, gapMs: 10_000 } },
        { status: 200, body: big, trickle: { pieces: 4, gapMs: 50 } },
      ),
      { timeoutMs: 1_000 },
    );
    expect(await client.jobs.result(UUID_OF_JOB)).toEqual(big);
    expect(calls).toHaveLength(2);
    expect(calls[1]!.at - calls[0]!.at).toBeGreaterThan(950);
    expect(calls[1]!.at - calls[0]!.at).toBeLessThan(8_000);
  });

  it('any other answer is bounded as a whole by the attempt timeout, as before', async () => {
    const { client, calls } = await clientFor(
      sequence({ status: 200, body: big, trickle: { pieces: 10, gapMs: 200 } }),
      { timeoutMs: 1_000, maxRetries: 1 },
    );
    await expect(client.scrub(request)).rejects.toBeInstanceOf(DncConnectionError);
    expect(calls).toHaveLength(2);
  });
});
