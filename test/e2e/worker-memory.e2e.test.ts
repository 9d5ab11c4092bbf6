import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { v2 } from '../../services/job-scheduler/test/support/e2e.js';
import { expectInvariants } from '../support/invariants.js';
import { loadRegistry, type SeededOrg, seedOrg } from '../support/seed.js';
import { startTestStack, type TestStack } from '../support/stack.js';
import { coJobWithResultOf } from '../support/v2-sizes.js';

// Issue 14 item 9: a worker runs six jobs at once (two per country, three countries) with a 384 MiB
// V8 heap (charts/dnc-scrub values.yaml, nodeMaxOldSpaceMb). The largest admissible job (its result
// exactly 25 MiB: 451,000 inputs, ~22 MB of JSON) held its decoded string, its parsed array and its
// input buffer at once; six of them ran the process out of memory, and each restart burned an attempt
// until platform_failure. Here the worker runs with that heap limit and that concurrency (six jobs of
// one country), the six largest jobs are queued before it starts, and all of them must succeed
// without the worker dying.

const LIMIT = 26_214_400;
const JOBS = 6;

describe('a worker with its production heap and six of the largest jobs', () => {
  let stack: TestStack;
  let org: SeededOrg;
  let api: ReturnType<typeof v2>;
  const job = coJobWithResultOf(LIMIT);

  beforeAll(async () => {
    stack = await startTestStack({
      label: 'worker_memory',
      countries: ['co'],
      skip: ['job-worker'],
      processEnv: {
        'job-worker': {
          DNC_WORKER_JOB_CONCURRENCY: String(JOBS),
          DNC_JOB_MAX_ATTEMPTS: '2',
        },
      },
    });
    org = await seedOrg(stack, ['co'], { quota: 10_000_000 });
    api = v2(stack, () => org);
    await stack.admin(['org', 'set-rate-limit', '--org', org.orgId, '--limit', '60000']);
    await loadRegistry(stack, 'co', job.registered);
  });

  afterAll(async () => {
    await stack?.teardown();
  });

  const runSix = async (heapMiB: number) => {
    const p = stack.processes.get('job-worker')!;
    p.env['NODE_OPTIONS'] = `--max-old-space-size=${heapMiB}`;
    const ids: string[] = [];
    const body = JSON.stringify({ country: 'co', phones: job.phones });
    for (let i = 0; i < JOBS; i++) {
      // A client retries a 503 (and a 409 while its first try is in progress) with the same key: a
      // loaded machine may not admit 22 MB in time.
      const key = api.key();
      let res: Response | undefined;
      for (let t = 0; t < 30; t++) {
        res = await fetch(`${stack.baseUrl}/v2/scrub`, {
          method: 'POST',
          headers: {
            authorization: `Bearer ${org.apiKey}`,
            'idempotency-key': key,
            'content-type': 'application/json',
          },
          body,
        });
        // 409 idempotency_key_in_progress: the first try of this key is still being admitted.
        if (res.status !== 503 && res.status !== 409) break;
        const why = await res.text();
        console.warn(`submit ${i}: ${res.status} ${why}`);
        await new Promise((r) => setTimeout(r, 2_000));
      }
      expect(res!.status).toBe(202);
      ids.push(((await res!.json()) as { job_id: string }).job_id);
    }
    await stack.start('job-worker');
    const worker = stack.child('job-worker')!;
    const deadline = Date.now() + 600_000;
    const states = new Map<string, string>();
    while (Date.now() < deadline && [...states.values()].filter((s) => s === 'succeeded').length < JOBS) {
      expect(worker.exitCode, stack.logsOf('job-worker').slice(-2_000)).toBeNull();
      expect(worker.signalCode).toBeNull();
      for (const id of ids) {
        if (states.get(id) === 'succeeded') continue;
        const r = await api.status(id);
        states.set(id, r.body.status);
        expect(
          r.body.status,
          `${JSON.stringify(r.body.error)} ${stack
            .logsOf('job-worker')
            .split('\n')
            .filter((l) => l.includes('failed'))
            .slice(-5)
            .join('\n')}`,
        ).not.toBe('failed');
      }
      await new Promise((r) => setTimeout(r, 2_000));
    }
    expect([...states.values()]).toEqual(Array(JOBS).fill('succeeded'));
    expect(worker.exitCode).toBeNull();
    // No attempt was burned by a restart or by waiting for memory: each job's first claim is attempt 1.
    // (On a saturated machine a lease can still run out while a job runs; it is then claimed again.)
    const started = stack
      .logsOf('job-worker')
      .split('\n')
      .filter((l) => l.includes('"job started"'));
    for (const id of ids) {
      const attempts = started.filter((l) => l.includes(id)).map((l) => JSON.parse(l).attempt as number);
      expect(attempts[0]).toBe(1);
      expect(attempts.length).toBeLessThanOrEqual(2);
    }
    await stack.stop('job-worker');
  };

  it('with the chart heap (384 MiB): all six succeed, the worker never dies, no attempt burned', async () => {
    await runSix(384);
    await expectInvariants(stack, { canaries: [] });
  }, 900_000);

  it('with a heap too small for six at once (256 MiB): the budget admits what fits, the rest wait unclaimed, all succeed', async () => {
    await runSix(256);
    await expectInvariants(stack, { canaries: [] });
  }, 900_000);
});
