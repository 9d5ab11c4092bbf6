import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { v2 } from '../../services/job-scheduler/test/support/e2e.js';
import { expectInvariants } from '../support/invariants.js';
import { loadRegistry, type SeededOrg, seedOrg } from '../support/seed.js';
import { startTestStack, type TestStack } from '../support/stack.js';
import { coLargestHeapJob } from '../support/v2-sizes.js';

// Issue 14 item 9: a worker with the chart's 384 MiB V8 heap (charts/dnc-scrub values.yaml,
// nodeMaxOldSpaceMb). Each running job holds its inputs as a parsed array; the admissible job that costs
// the most heap has the most inputs at the most bytes the 25 MiB limits leave (coLargestHeapJob: 500,000
// valid numbers of 49 characters, ~26.0 MB of JSON, ~40 MB of heap once parsed). The jobs are queued
// before the worker starts, so it takes as many at once as its concurrency allows. The test restarts a
// worker that dies, as the orchestrator would, and records why.
//
// Measured on the worker before the memory budget (sampled heap peak): six at once, the chart's
// concurrency (two per country, three countries), fit the 384 MiB heap (peak ~303 MiB); ten at once ran
// it out of heap ("JavaScript heap out of memory"), twice, and each restart burned an attempt of every
// job it held until all ten failed with platform_failure. With the budget (~304 MiB at this heap, ~46 MiB
// per such job) six run and the others wait unclaimed: all succeed, no attempt burned (peak ~280 MiB).

describe('a worker with its production heap and the largest-heap jobs', () => {
  let stack: TestStack;
  let org: SeededOrg;
  let api: ReturnType<typeof v2>;
  const phones = coLargestHeapJob();

  beforeAll(async () => {
    stack = await startTestStack({
      label: 'worker_memory',
      countries: ['co'],
      skip: ['job-worker'],
      processEnv: {
        'job-worker': {
          DNC_JOB_MAX_ATTEMPTS: '2',
        },
      },
    });
    org = await seedOrg(stack, ['co'], { quota: 10_000_000 });
    api = v2(stack, () => org);
    await stack.admin(['org', 'set-rate-limit', '--org', org.orgId, '--limit', '60000']);
    await loadRegistry(stack, 'co', ['+573111000000']);
  });

  afterAll(async () => {
    await stack?.teardown();
  });

  /** `jobs` of the largest-heap job queued, then a worker with `heapMiB` of heap that runs up to `jobs` at once. */
  const run = async (heapMiB: number, jobs: number) => {
    const p = stack.processes.get('job-worker')!;
    p.env['NODE_OPTIONS'] = `--max-old-space-size=${heapMiB}`;
    p.env['DNC_WORKER_JOB_CONCURRENCY'] = String(jobs);
    const ids: string[] = [];
    const body = JSON.stringify({ country: 'co', phones });
    for (let i = 0; i < jobs; i++) {
      // A client retries a 503 (and a 409 while its first try is in progress) with the same key: a
      // loaded machine may not admit 26 MB in time.
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
    let worker = stack.child('job-worker')!;
    // The worker's V8 heap, sampled: the peak is printed with the run.
    let peakHeap = 0;
    const metricsUrl = `http://127.0.0.1:${stack.addresses.metrics['job-worker']}/metrics`;
    const sample = setInterval(() => {
      fetch(metricsUrl, { signal: AbortSignal.timeout(900) })
        .then((r) => r.text())
        .then((text) => {
          // nodejs_heap_size_used_bytes{service="job-worker"} <bytes>
          const line = text.split('\n').find((l) => /^nodejs_heap_size_used_bytes[{ ]/.test(l));
          if (line) peakHeap = Math.max(peakHeap, Number(line.split(' ').at(-1)));
        })
        .catch(() => {});
    }, 1_000);
    // A worker that dies is restarted, as the orchestrator would; each death is recorded with its cause.
    const deaths: string[] = [];
    const deadline = Date.now() + 240_000;
    const states = new Map<string, string>();
    try {
      while (
        Date.now() < deadline &&
        [...states.values()].filter((s) => s !== 'queued' && s !== 'running').length < jobs
      ) {
        if (worker.exitCode !== null || worker.signalCode !== null) {
          const log = stack.logsOf('job-worker');
          const cause =
            log.match(/FATAL ERROR: [^\n]*|JavaScript heap out of memory/)?.[0] ??
            `exit ${worker.exitCode ?? worker.signalCode}`;
          deaths.push(`${cause} (heap peak ${Math.round(peakHeap / 2 ** 20)} MiB)`);
          console.warn(`worker died at ${heapMiB} MiB: ${cause}; restarted`);
          await stack.start('job-worker');
          worker = stack.child('job-worker')!;
        }
        for (const id of ids) {
          const st = states.get(id);
          if (st && st !== 'queued' && st !== 'running') continue;
          const r = await api.status(id);
          states.set(id, r.body.status === 'failed' ? `failed ${r.body.error?.error}` : r.body.status);
        }
        await new Promise((r) => setTimeout(r, 2_000));
      }
    } finally {
      clearInterval(sample);
    }
    const ended = [...states.values()].reduce<Record<string, number>>((m, st) => {
      m[st] = (m[st] ?? 0) + 1;
      return m;
    }, {});
    console.log(
      `worker at ${heapMiB} MiB, ${jobs} jobs: heap peak ${Math.round(peakHeap / 2 ** 20)} MiB, ${deaths.length} deaths, jobs ${JSON.stringify(ended)}`,
    );
    expect(deaths, 'the worker died (restarted as an orchestrator would)').toEqual([]);
    expect([...states.values()]).toEqual(Array(jobs).fill('succeeded'));
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

  it('with the chart heap (384 MiB) and six at once (two per country, three countries): all succeed, the worker never dies, no attempt burned', async () => {
    await run(384, 6);
    await expectInvariants(stack, { canaries: [] });
  }, 900_000);

  it('with the chart heap and more jobs than it holds (ten at once): the budget admits six, the rest wait unclaimed, all succeed', async () => {
    await run(384, 10);
    await expectInvariants(stack, { canaries: [] });
  }, 900_000);
});
