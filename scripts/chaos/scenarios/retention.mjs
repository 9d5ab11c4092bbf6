// S13: the retention cleanup of a finished job's result (a 4-second result TTL for the run) made to
// fail three times by PostgreSQL itself (a trigger refuses the purge): retried, visible in metrics and
// in `dnc-admin jobs cleanup-status`, then done.
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { api } from '../../reliability/http.mjs';
import { admin, sleep } from '../../reliability/stack.mjs';
import { metric } from '../probe.mjs';
import { phonesOf } from '../traffic.mjs';
import { COUNTRY, scenarioOrg } from '../world.mjs';

const INSTALL = `
CREATE TABLE IF NOT EXISTS public.chaos_refused_purges (job_id uuid PRIMARY KEY);
-- A sequence counts the attempts: nextval survives the rollback the refusal causes.
CREATE SEQUENCE IF NOT EXISTS public.chaos_purge_attempts;
CREATE OR REPLACE FUNCTION public.chaos_refuse_purge() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF OLD.kind = 'result' AND EXISTS (SELECT 1 FROM public.chaos_refused_purges WHERE job_id = OLD.job_id)
     AND nextval('public.chaos_purge_attempts') <= 3 THEN
    RAISE EXCEPTION 'chaos: purge refused';
  END IF;
  RETURN OLD;
END $$;
DROP TRIGGER IF EXISTS chaos_refuse_purge ON jobs.job_blobs;
CREATE TRIGGER chaos_refuse_purge BEFORE DELETE ON jobs.job_blobs FOR EACH ROW EXECUTE FUNCTION public.chaos_refuse_purge();`;
const REMOVE = `DROP TRIGGER IF EXISTS chaos_refuse_purge ON jobs.job_blobs;
DROP FUNCTION IF EXISTS public.chaos_refuse_purge(); DROP TABLE IF EXISTS public.chaos_refused_purges;
DROP SEQUENCE IF EXISTS public.chaos_purge_attempts;`;

export async function s13CleanupRetries(world, ledger) {
  const org = await scenarioOrg(world, 'Chaos S13');
  const failures = [];
  let sawFailing = false;
  let jobId;
  // The result's purge waits twice a download's longest time past its TTL: 1 s here.
  await world.restartJobs({ DNC_RESULT_TTL_SECONDS: '4', DNC_RESULT_STREAM_MAX_MS: '500' });
  const db = new pg.Client({ connectionString: world.stack.options.databaseUrl });
  db.on('error', () => {});
  await db.connect();
  // Read before the scheduler restarts again (a restart starts the counters over).
  const failuresBefore = await metric(world.stack, 'job-scheduler', 'dnc_cleanup_failures_total');
  let failuresAfter = failuresBefore;
  try {
    await db.query(INSTALL);
    const idem = randomUUID();
    const r = await api(world.publicBaseUrl, 'POST', '/v2/scrub', {
      key: org.apiKey,
      idem,
      json: { country: COUNTRY, phones: phonesOf(100).phones },
    });
    if (r.status !== 202) throw new Error(`submit answered ${r.status}`);
    jobId = r.body.job_id;
    ledger.accept(org, r.body, idem);
    await db.query('INSERT INTO public.chaos_refused_purges VALUES ($1)', [jobId]);
    const until = Date.now() + 60_000;
    for (;;) {
      const status = await admin(world.stack, 'jobs cleanup-status');
      const mine = status.tasks?.filter((t) => t.job_id === jobId) ?? [];
      if (mine.some((t) => t.attempts > 0)) sawFailing = true;
      const blobs = await db.query(
        `SELECT count(*)::int AS n FROM jobs.job_blobs WHERE job_id = $1 AND kind = 'input'`,
        [jobId],
      );
      if (sawFailing && blobs.rows[0].n === 0 && mine.every((t) => t.target !== 'result')) break;
      if (Date.now() > until) {
        failures.push(`result still present 60 s after its TTL (visible as failing: ${sawFailing})`);
        break;
      }
      await sleep(500);
    }
    const attempts = Number(
      (await db.query('SELECT last_value FROM public.chaos_purge_attempts')).rows[0].last_value,
    );
    if (attempts < 4) failures.push(`the purge was attempted ${attempts} times, expected 3 refused + 1 done`);
    failuresAfter = await metric(world.stack, 'job-scheduler', 'dnc_cleanup_failures_total');
  } finally {
    await db.query(REMOVE).catch(() => {});
    await db.end();
    await world.restartJobs({ DNC_RESULT_TTL_SECONDS: undefined, DNC_RESULT_STREAM_MAX_MS: undefined });
  }
  if (failuresAfter - failuresBefore < 3)
    failures.push(`dnc_cleanup_failures_total rose by ${failuresAfter - failuresBefore}, expected 3`);
  if (!sawFailing) failures.push('the failing task never showed in cleanup-status');
  const job = ledger.jobs.get(jobId);
  if (job)
    job.status = (
      await api(world.publicBaseUrl, 'GET', `/v2/scrub/${jobId}`, { key: org.apiKey })
    ).body?.status;
  return {
    scenario: 'S13 retention cleanup failing 3 times',
    faults: '3 purges refused by a trigger',
    requests: 3,
    jobs: 1,
    pass: failures.length === 0,
    figures: `cleanup failures metric +${failuresAfter - failuresBefore}; task visible while failing: ${sawFailing}; result purged`,
    failures,
  };
}
