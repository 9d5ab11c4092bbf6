import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call } from '../support/http.js';
import { startOtlpReceiver } from '../support/otlp-receiver.js';
import { loadRegistry, type SeededOrg, seedOrg } from '../support/seed.js';
import { startTestStack, type TestStack } from '../support/stack.js';

const REGISTERED = '+57 300 123 4567';
const SAFE = '3109876543';

/** A client's W3C traceparent with a fresh trace id: every span of the request must join that trace. */
function traceparent(): { header: string; traceId: string } {
  const traceId = randomBytes(16).toString('hex');
  return { traceId, header: `00-${traceId}-${randomBytes(8).toString('hex')}-01` };
}

async function until(predicate: () => boolean, timeoutMs: number): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end && !predicate()) await new Promise((r) => setTimeout(r, 200));
}

// Issue 19, item 3 (tracing): with OTEL_EXPORTER_OTLP_ENDPOINT set, every hop exports spans over OTLP/HTTP and
// the W3C traceparent rides Connect headers and the JetStream message: one trace holds a span of the gateway,
// admission, quota and the adapter for a v1 request, and of the scheduler and the worker too for a v2 job.
// Spans name routes and methods only: no phone number and no API key reaches the receiver.
describe('OpenTelemetry traces across the hops, to a local OTLP receiver', () => {
  let receiver: Awaited<ReturnType<typeof startOtlpReceiver>>;
  let stack: TestStack;
  let org: SeededOrg;

  beforeAll(async () => {
    receiver = await startOtlpReceiver();
    stack = await startTestStack({
      label: 'tracing',
      countries: ['co'],
      env: { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_BSP_SCHEDULE_DELAY: '200' },
    });
    org = await seedOrg(stack, ['co']);
    await loadRegistry(stack, 'co', [REGISTERED]);
  });
  afterAll(async () => {
    await stack?.teardown();
    await receiver?.close();
  });

  it('v1: one trace with spans of the gateway, admission, quota and the adapter', async () => {
    const { header, traceId } = traceparent();
    const res = await call(stack.baseUrl, 'POST', '/v1/scrub', {
      apiKey: org.apiKey,
      idempotencyKey: `trace-v1-${traceId}`,
      json: { country: 'co', phones: [REGISTERED, SAFE] },
      headers: { traceparent: header },
    });
    expect(res.status).toBe(200);
    const wanted = ['gateway', 'admission', 'quota', 'registry-adapter'];
    await until(() => wanted.every((s) => receiver.servicesOf(traceId).has(s)), 15_000);
    expect([...receiver.servicesOf(traceId)].sort()).toEqual(expect.arrayContaining(wanted));
    const gateway = receiver.spans.find(
      (s) => s.traceId === traceId && s.service === 'gateway' && s.kind === 2,
    );
    expect(gateway).toMatchObject({
      name: 'POST /v1/scrub',
      attributes: { 'http.response.status_code': 200 },
    });
  });

  it('v2: the trace goes through the JetStream message to the worker and its adapter calls', async () => {
    const { header, traceId } = traceparent();
    const res = await call(stack.baseUrl, 'POST', '/v2/scrub', {
      apiKey: org.apiKey,
      idempotencyKey: `trace-v2-${traceId}`,
      json: { country: 'co', phones: [REGISTERED, SAFE] },
      headers: { traceparent: header },
    });
    expect(res.status).toBe(202);
    const wanted = ['gateway', 'admission', 'quota', 'job-scheduler', 'job-worker', 'registry-adapter'];
    // The worker's 'job run' span ends last (after its adapter calls, the settlement and the ack) and is
    // exported in the worker's next batch: wait for it too, not only for a span of every service.
    const jobRun = () =>
      receiver.spans.some((s) => s.traceId === traceId && s.service === 'job-worker' && s.name === 'job run');
    await until(() => wanted.every((s) => receiver.servicesOf(traceId).has(s)) && jobRun(), 30_000);
    expect([...receiver.servicesOf(traceId)].sort()).toEqual(expect.arrayContaining(wanted));
    expect(jobRun()).toBe(true);
  });

  it('no span carries a phone number, the API key or a body', () => {
    const exported = receiver.bodies.join('\n');
    expect(exported.length).toBeGreaterThan(0);
    for (const secret of [REGISTERED, SAFE, '3001234567', org.apiKey]) expect(exported).not.toContain(secret);
  });
});
