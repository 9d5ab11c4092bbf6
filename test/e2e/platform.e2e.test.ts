import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { call, expectNoLeak } from '../support/http.js';
import { expectInvariants } from '../support/invariants.js';
import { loadRegistry, type SeededOrg, seedOrg } from '../support/seed.js';
import { startTestStack, type TestStack } from '../support/stack.js';

// Issue 2, "Done when": every service its own process, real HTTP and gRPC.
describe('platform: processes, health, readiness, drain (issue 2)', () => {
  let stack: TestStack;
  let org: SeededOrg;

  beforeAll(async () => {
    stack = await startTestStack({ label: 'platform', countries: ['co'] });
    org = await seedOrg(stack, ['co']);
    await loadRegistry(stack, 'co', ['+57 300 123 4567']);
  });
  // After every test (stopped processes): the stores as the invariant checker reads them.
  afterEach(async () => {
    await expectInvariants(stack);
  });

  afterAll(async () => {
    await stack?.teardown();
  });

  it('GET /v1/health: {"ok":true} with both v1 headers; POST gives 405 with Allow: GET', async () => {
    const ok = await call(stack.baseUrl, 'GET', '/v1/health');
    expect(ok.status).toBe(200);
    expect(ok.body).toEqual({ ok: true });
    expect(ok.headers.get('x-retention')).toBe('zero');
    expect(ok.headers.get('cache-control')).toBe('no-store, max-age=0');
    const post = await call(stack.baseUrl, 'POST', '/v1/health');
    expect(post.status).toBe(405);
    expect(post.headers.get('allow')).toBe('GET');
    expect(post.headers.get('x-retention')).toBe('zero');
    expectNoLeak(post);
  });

  it('dnc-admin status lists every service as serving, with its version', async () => {
    const status = (await stack.admin(['status'])) as {
      services: { service: string; status: string; version: string }[];
    };
    const names = status.services.map((s) => s.service).sort();
    expect(names).toEqual(['admission', 'dashboard', 'job-scheduler', 'quota', 'registry-adapter-co']);
    for (const s of status.services) {
      expect(s.status, s.service).toBe('serving');
      expect(s.version).toMatch(/^\d+\.\d+\.\d+/);
    }
  });

  it('stopping admission turns /v1/ready to 503 within 5 s; starting it again brings 200 back', async () => {
    expect((await call(stack.baseUrl, 'GET', '/v1/ready')).status).toBe(200);
    await stack.stop('admission');
    const stoppedAt = Date.now();
    let status = 200;
    while (Date.now() - stoppedAt < 5_000) {
      const r = await call(stack.baseUrl, 'GET', '/v1/ready');
      status = r.status;
      if (status === 503) {
        expect(r.headers.get('x-retention')).toBe('zero');
        expect(r.headers.get('cache-control')).toBe('no-store, max-age=0');
        break;
      }
      await new Promise((res) => setTimeout(res, 200));
    }
    expect(status).toBe(503);
    // A scrub while admission is down: the documented platform error, nothing internal.
    const down = await call(stack.baseUrl, 'POST', '/v1/scrub', {
      apiKey: org.apiKey,
      idempotencyKey: 'while-admission-down',
      json: { country: 'co', phones: ['3001234567'] },
    });
    expect(down.status).toBe(503);
    expect(down.body.error).toBe('platform_failure');
    expectNoLeak(down);
    await stack.start('admission');
    const restartedAt = Date.now();
    while (Date.now() - restartedAt < 10_000) {
      if ((await call(stack.baseUrl, 'GET', '/v1/ready')).status === 200) break;
      await new Promise((res) => setTimeout(res, 200));
    }
    expect((await call(stack.baseUrl, 'GET', '/v1/ready')).status).toBe(200);
  });

  // Spec, GET /v1/ready: "503 when the process is draining or the data store is unavailable."
  it('SIGTERM to the gateway during a slow request: /v1/ready answers 503 while it drains, the request finishes, the process exits 0', async () => {
    await stack.admin(['adapter', 'drill', '--country', 'co', '--latency-ms', '2000']);
    try {
      const started = Date.now();
      const slow = call(stack.baseUrl, 'POST', '/v1/scrub', {
        apiKey: org.apiKey,
        idempotencyKey: `drain-${started}`,
        json: { country: 'co', phones: ['+57 300 123 4567', '3109999999'] },
      });
      await new Promise((r) => setTimeout(r, 500));
      const exited = stack.stop('gateway', 'SIGTERM');
      // Polled as a load balancer would, from the signal on.
      const probes: (number | string)[] = [];
      for (let i = 0; i < 10 && !probes.includes(503); i++) {
        const probe = await call(stack.baseUrl, 'GET', '/v1/ready').then(
          (r) => {
            if (r.status === 503) {
              expect(r.body).toEqual({ ok: false, error: 'not_ready' });
              expect(r.headers.get('x-retention')).toBe('zero');
              expect(r.headers.get('cache-control')).toBe('no-store, max-age=0');
            }
            return r.status;
          },
          (e: unknown) => String((e as { cause?: { code?: string } }).cause?.code ?? e),
        );
        probes.push(probe);
        await new Promise((r) => setTimeout(r, 50));
      }
      expect(probes).toContain(503);
      const res = await slow;
      expect(res.status).toBe(200);
      expect(res.body.prohibited_numbers_to_call).toEqual(['+57 300 123 4567']);
      expect(Date.now() - started).toBeGreaterThanOrEqual(2000);
      expect(await exited).toBe(0);
    } finally {
      await stack.admin(['adapter', 'drill', '--country', 'co', '--clear']);
      await stack.start('gateway');
    }
  });
});
