import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, expectNoLeak } from '../support/http.js';
import { loadRegistry, type SeededOrg, seedOrg } from '../support/seed.js';
import { startTestStack, type TestStack } from '../support/stack.js';

// Issue 15, "The gateway's own bounds": memory per request admitted against a budget, JSON nesting
// limited, header/body/idle timeouts, the spec's 25 MiB limit kept. Measured before the bounds: 8
// concurrent ~25 MB v2 bodies and 2 deep-JSON bodies from a zero-quota organization took the gateway
// from 95 to 641 MiB and delayed another organization's one-number v1 request to 1.96 s; a slow body
// held its socket forever.

const LIMIT = 26_214_400;
const REQUEST_TIMEOUT_MS = 3_000;
const HEADERS_TIMEOUT_MS = 2_000;

function rssMiB(pid: number): number {
  const kb = Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]);
  return kb / 1024;
}

/** ~25 MB of valid v2 body: 480,000 phones of 50 characters. */
function largeV2Body(): Buffer {
  const phone = JSON.stringify('+57 300 123 4567'.padEnd(50, ' '));
  return Buffer.from(`{"country":"co","phones":[${Array(480_000).fill(phone).join(',')}]}`);
}

/** Resolves with the time the server closed the connection (ms after opening), or -1 after `maxMs`. */
function closedAfter(port: number, send: (s: net.Socket) => void, maxMs: number): Promise<number> {
  return new Promise((resolve) => {
    const t0 = Date.now();
    const s = net.connect(port, '127.0.0.1', () => send(s));
    const timer = setTimeout(() => {
      s.destroy();
      resolve(-1);
    }, maxMs);
    s.on('data', () => {});
    s.on('error', () => {});
    s.on('close', () => {
      clearTimeout(timer);
      resolve(Date.now() - t0);
    });
  });
}

describe('the gateway bounds what one request may cost it (issue 15)', () => {
  let stack: TestStack;
  let busy: SeededOrg;
  let other: SeededOrg;
  let port: number;

  beforeAll(async () => {
    stack = await startTestStack({
      label: 'bounds',
      countries: ['co'],
      processEnv: {
        gateway: {
          DNC_REQUEST_TIMEOUT_MS: String(REQUEST_TIMEOUT_MS),
          DNC_HEADERS_TIMEOUT_MS: String(HEADERS_TIMEOUT_MS),
          DNC_SOCKET_IDLE_TIMEOUT_MS: '20000',
        },
      },
    });
    port = Number(new URL(stack.baseUrl).port);
    await loadRegistry(stack, 'co', ['+57 300 123 4567']);
    busy = await seedOrg(stack, ['co'], { name: 'Zero quota' });
    await stack.admin(['quota', 'set', '--org', busy.orgId, '--country', 'co', '--limit', '0']);
    other = await seedOrg(stack, ['co']);
  });
  afterAll(async () => {
    await stack?.teardown();
  });

  it('keeps large and deep bodies of one organization from delaying or exhausting the others', async () => {
    const gateway = stack.child('gateway')!.pid!;
    const before = rssMiB(gateway);
    const big = largeV2Body();
    const deep = Buffer.from(`{"country":"co","phones":${'['.repeat(LIMIT - 40)}`);
    const send = (body: Buffer) =>
      fetch(`${stack.baseUrl}/v2/scrub`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${busy.apiKey}`,
          'idempotency-key': randomUUID(),
          'content-type': 'application/json',
        },
        body,
      }).then(async (r) => ({
        status: r.status,
        retryAfter: r.headers.get('retry-after'),
        text: await r.text(),
      }));
    let peak = before;
    const sampler = setInterval(() => {
      peak = Math.max(peak, rssMiB(gateway));
    }, 50);
    const hostile = Promise.all([...Array.from({ length: 8 }, () => send(big)), send(deep), send(deep)]);
    // While they are in flight: another organization's one-number request.
    await new Promise((r) => setTimeout(r, 300));
    const t0 = performance.now();
    const one = await call(stack.baseUrl, 'POST', '/v1/scrub', {
      apiKey: other.apiKey,
      idempotencyKey: randomUUID(),
      json: { country: 'co', phones: ['+57 300 123 4567'] },
    });
    const oneMs = performance.now() - t0;
    const answers = await hostile;
    clearInterval(sampler);
    process.stderr.write(
      `bounds: one-number v1 ${Math.round(oneMs)} ms; gateway RSS ${Math.round(before)} -> peak ${Math.round(peak)} MiB; answers ${answers.map((a) => a.status).join(' ')}\n`,
    );
    expect(one.status).toBe(200);
    // Measured on this 2-core machine under other engineers' load (load average ~20): 1.0-2.2 s after
    // the bounds, 2.1 s before (with the gateway at 1.8 GiB). The admitted body's parse still runs on
    // the event loop (docs/reliability.md); the memory bound below is what failed before.
    expect(oneMs).toBeLessThan(3_000);
    // Each answer documented: too large for a job (413), no quota (429), no room now (503 + Retry-After),
    // or 400 when its wait plus its upload passed the (short, here) request timeout.
    for (const a of answers.slice(0, 8)) {
      expect([400, 413, 429, 503]).toContain(a.status);
      expect(() => JSON.parse(a.text)).not.toThrow();
      if (a.status === 503) expect(Number(a.retryAfter)).toBeGreaterThanOrEqual(1);
    }
    for (const a of answers.slice(8)) expect([400, 503]).toContain(a.status);
    expect(peak - before).toBeLessThan(400);
  }, 120_000);

  it('refuses deeply nested JSON after a scan, not a recursive parse', async () => {
    // 24 MB of arrays 1,000 deep: V8's JSON.parse spent ~9 s on it (one event-loop stall).
    const group = `${'['.repeat(1_000)}${']'.repeat(1_000)}`;
    const body = Buffer.from(`{"country":"co","phones":[${Array(12_000).fill(group).join(',')}]}`);
    const t0 = performance.now();
    const res = await call(stack.baseUrl, 'POST', '/v2/scrub', {
      apiKey: other.apiKey,
      idempotencyKey: randomUUID(),
      body: body.toString(),
      headers: { 'content-type': 'application/json' },
    });
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('validation_error');
    expect(performance.now() - t0).toBeLessThan(1_000);
    expectNoLeak(res);
  });

  it('closes a connection whose body never finishes, and one whose headers never do', async () => {
    const slowBody = closedAfter(
      port,
      (s) => {
        s.write(
          `POST /v1/scrub HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${other.apiKey}\r\nidempotency-key: ${randomUUID()}\r\ncontent-type: application/json\r\ncontent-length: 1000\r\n\r\n{`,
        );
        const t = setInterval(() => (s.destroyed ? clearInterval(t) : s.write(' ')), 500);
      },
      REQUEST_TIMEOUT_MS + 5_000,
    );
    const slowHeaders = closedAfter(
      port,
      (s) => {
        s.write('GET /v1/health HTTP/1.1\r\nhost: x\r\n');
        const t = setInterval(() => (s.destroyed ? clearInterval(t) : s.write('x-a: b\r\n')), 500);
      },
      HEADERS_TIMEOUT_MS + 5_000,
    );
    const [body, headers] = await Promise.all([slowBody, slowHeaders]);
    expect(body).toBeGreaterThan(0);
    expect(body).toBeLessThan(REQUEST_TIMEOUT_MS + 2_000);
    expect(headers).toBeGreaterThan(0);
    expect(headers).toBeLessThan(HEADERS_TIMEOUT_MS + 2_000);
  });

  it('still answers a legitimate body of exactly 25 MiB (the spec limit stays)', async () => {
    const core = JSON.stringify({ country: 'co', phones: ['+57 300 123 4567', '3001234568'] });
    const body = `${core.slice(0, -1)}${' '.repeat(LIMIT - core.length)}}`;
    expect(Buffer.byteLength(body)).toBe(LIMIT);
    const res = await call(stack.baseUrl, 'POST', '/v1/scrub', {
      apiKey: other.apiKey,
      idempotencyKey: randomUUID(),
      body,
      headers: { 'content-type': 'application/json' },
    });
    expect(res.status).toBe(200);
    expect(res.body.summary.total_checked).toBe(2);
    const over = await call(stack.baseUrl, 'POST', '/v1/scrub', {
      apiKey: other.apiKey,
      idempotencyKey: randomUUID(),
      body: `${body} `,
      headers: { 'content-type': 'application/json' },
    });
    expect(over.status).toBe(413);
  });
});
