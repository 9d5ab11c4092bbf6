// v2 phases: one large job from POST to the result downloaded, then concurrent smaller jobs.
import pg from 'pg';
import { expectSummary, scrubRequest } from './bench-stack.mjs';
import { CONFIG, sleep } from './config.mjs';
import { now, pct, round } from './stats.mjs';
import { body, inputs } from './workload.mjs';

/** One v2 job: POST (admission) -> poll until terminal -> download; stage times from the jobs table. */
async function runJob(ctx, size, seed, tag) {
  const { phones, expected } = inputs(size, CONFIG.registry_size, seed, { e164: true });
  const bodyText = body(phones);
  const t0 = now();
  const res = await scrubRequest(ctx, '/v2/scrub', bodyText, `bench-v2-${ctx.run}-${tag}`);
  const job = await res.json();
  const tAdmitted = now();
  if (res.status !== 202) throw new Error(`v2 POST: HTTP ${res.status} ${JSON.stringify(job).slice(0, 200)}`);
  let status = job.status;
  let polls = 0;
  while (status === 'queued' || status === 'running') {
    await sleep(CONFIG.poll_interval_ms);
    const r = await fetch(job.status_url, { headers: { authorization: `Bearer ${ctx.apiKey}` } });
    const resource = await r.json();
    polls++;
    if (r.status !== 200) throw new Error(`v2 status: HTTP ${r.status}`);
    status = resource.status;
  }
  const tDone = now();
  if (status !== 'succeeded') throw new Error(`v2 job ended ${status}`);
  const r = await fetch(job.result_url, { headers: { authorization: `Bearer ${ctx.apiKey}` } });
  const text = await r.text();
  const tDownloaded = now();
  if (r.status !== 200) throw new Error(`v2 result: HTTP ${r.status}`);
  expectSummary(`v2 ${tag}`, JSON.parse(text).summary, expected, size);
  const row = await jobTimes(ctx, job.job_id);
  return {
    inputs: size,
    request_bytes: bodyText.length,
    result_bytes: text.length,
    total_ms: round(tDownloaded - t0, 1),
    admission_ms: round(tAdmitted - t0, 1),
    queue_wait_ms: round(Number(row.queue_ms), 1),
    execution_ms: round(Number(row.exec_ms), 1),
    // From the 202 to the poll that saw `succeeded` (queue + execution + up to one poll interval).
    until_succeeded_seen_ms: round(tDone - tAdmitted, 1),
    download_ms: round(tDownloaded - tDone, 1),
    polls,
  };
}

/** created -> started (queue wait) and started -> terminal (execution), from the scheduler's table. */
async function jobTimes(ctx, jobId) {
  const client = new pg.Client({ connectionString: ctx.databaseUrl });
  await client.connect();
  try {
    const q = await client.query(
      `SELECT extract(epoch FROM started_at - created_at) * 1000 AS queue_ms,
              extract(epoch FROM terminal_at - started_at) * 1000 AS exec_ms
         FROM jobs.jobs WHERE id = $1`,
      [jobId],
    );
    return q.rows[0];
  } finally {
    await client.end();
  }
}

/**
 * The large job as its floor measures it (floor.mjs: one unmeasured pass, then the median of several).
 * First a 10,000-number job and a first job of the large size (`benchV2First`: reported on its own, and
 * its phase gives the memory per large request), then `CONFIG.job_runs` more (`benchV2Repeated`), each
 * figure the median of those. The first job after start alone was one sample of code V8 had not yet
 * optimized for 8 MB bodies (admission fell from ~650 to ~300 ms over the first jobs of one stack),
 * against a floor that is a warm median.
 */
export async function benchV2First(ctx) {
  await runJob(ctx, Math.min(10_000, CONFIG.small_job_size), 50, 'warmup');
  return runJob(ctx, CONFIG.job_size, 2, 'large-first');
}

export async function benchV2Repeated(ctx) {
  const jobs = [];
  for (let i = 0; i < CONFIG.job_runs; i++) jobs.push(await runJob(ctx, CONFIG.job_size, 2, `large-${i}`));
  const median = (field) =>
    pct(
      jobs.map((j) => j[field]).sort((a, b) => a - b),
      50,
    );
  return {
    ...Object.fromEntries(Object.keys(jobs[0]).map((field) => [field, median(field)])),
    runs: jobs.length,
  };
}

export async function benchV2Concurrent(ctx) {
  const t0 = now();
  const jobs = await Promise.all(
    Array.from({ length: CONFIG.concurrent_jobs }, (_, i) =>
      runJob(ctx, CONFIG.small_job_size, 3 + i, `c${i}`),
    ),
  );
  return { makespan_ms: round(now() - t0, 1), jobs };
}
