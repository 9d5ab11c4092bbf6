import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call } from '../support/http.js';
import { loadRegistry, type SeededOrg, seedOrg } from '../support/seed.js';
import { startTestStack, type TestStack } from '../support/stack.js';

/** The log lines (JSON) of one process that carry this request id. */
function linesWith(stack: TestStack, process: Parameters<TestStack['logsOf']>[0], requestId: string) {
  return stack
    .logsOf(process)
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Record<string, unknown>)
    .filter((l) => l['request_id'] === requestId);
}

// Issue 19, item 3 (request ids): every response carries X-Request-Id (a client's well-formed one is kept;
// the OpenAPI validator of `call` requires the header on every documented response), and the log lines of
// every hop the request crosses carry it: gateway, admission, quota and the adapter for v1; through the
// JetStream message to the job worker for v2.
describe('request ids across the hops', () => {
  let stack: TestStack;
  let org: SeededOrg;

  beforeAll(async () => {
    // Debug level: every served RPC writes one line, so each hop has a line to look for.
    stack = await startTestStack({ label: 'reqid', countries: ['co'], env: { DNC_LOG_LEVEL: 'debug' } });
    org = await seedOrg(stack, ['co']);
    await loadRegistry(stack, 'co', ['+57 300 123 4567']);
  });
  afterAll(async () => {
    await stack?.teardown();
  });

  it("keeps a client's well-formed id, makes one otherwise, on successes and errors alike", async () => {
    const kept = await call(stack.baseUrl, 'GET', '/v1/health', {
      headers: { 'x-request-id': 'client-id_1.2:3' },
    });
    expect(kept.headers.get('x-request-id')).toBe('client-id_1.2:3');
    // A phone number or an API key would be written unmasked into every log line: replaced too.
    for (const bad of [
      'has space',
      'x'.repeat(129),
      'semi;colon',
      '',
      '5215512345678',
      `dnc_0123456789ab_${'A'.repeat(43)}`,
    ]) {
      const made = await call(stack.baseUrl, 'GET', '/v1/health', { headers: { 'x-request-id': bad } });
      expect(made.headers.get('x-request-id')).toMatch(
        /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/,
      );
    }
    const unauthorized = await call(stack.baseUrl, 'POST', '/v1/scrub', {
      apiKey: 'dnc_unknown',
      idempotencyKey: 'k1',
      json: { country: 'co', phones: ['1'] },
      headers: { 'x-request-id': 'err-401-id' },
    });
    expect(unauthorized.status).toBe(401);
    expect(unauthorized.headers.get('x-request-id')).toBe('err-401-id');
    // The error body stays as the spec fixes it: {error, message?} only.
    expect(Object.keys(unauthorized.body).every((k) => k === 'error' || k === 'message')).toBe(true);
  });

  it('v1: the gateway, admission, quota and the adapter log the request under its id', async () => {
    const requestId = `v1-${Date.now().toString(36)}`;
    const res = await call(stack.baseUrl, 'POST', '/v1/scrub', {
      apiKey: org.apiKey,
      idempotencyKey: `rid-${requestId}`,
      json: { country: 'co', phones: ['+57 300 123 4567', '3109999999'] },
      headers: { 'x-request-id': requestId },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-request-id')).toBe(requestId);
    const hops = ['gateway', 'admission', 'quota', 'adapter-co'] as const;
    const deadline = Date.now() + 10_000;
    while (Date.now() < deadline && hops.some((hop) => linesWith(stack, hop, requestId).length === 0)) {
      await new Promise((r) => setTimeout(r, 200));
    }
    for (const hop of hops) {
      expect(linesWith(stack, hop, requestId).length, hop).toBeGreaterThan(0);
    }
    expect(stack.logs()).not.toContain('3109999999');
  });

  it('v2: the id rides the JetStream message to the worker, whose job lines and adapter calls carry it', async () => {
    const requestId = `v2-${Date.now().toString(36)}`;
    const res = await call(stack.baseUrl, 'POST', '/v2/scrub', {
      apiKey: org.apiKey,
      idempotencyKey: `rid-${requestId}`,
      json: { country: 'co', phones: ['+57 300 123 4567', '3109999999'] },
      headers: { 'x-request-id': requestId },
    });
    expect(res.status).toBe(202);
    expect(res.headers.get('x-request-id')).toBe(requestId);
    // Log lines reach the test through each process's stdout pipe: wait until every hop's have arrived.
    const hops = ['gateway', 'admission', 'job-scheduler', 'job-worker', 'adapter-co'] as const;
    const deadline = Date.now() + 20_000;
    while (Date.now() < deadline && hops.some((hop) => linesWith(stack, hop, requestId).length === 0)) {
      await new Promise((r) => setTimeout(r, 200));
    }
    for (const hop of hops) {
      expect(linesWith(stack, hop, requestId).length, hop).toBeGreaterThan(0);
    }
    const workerLines = linesWith(stack, 'job-worker', requestId).map((l) => l['msg']);
    expect(workerLines).toContain('job executed');
  });
});
