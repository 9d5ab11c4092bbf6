import { createClient } from '@connectrpc/connect';
import { grpcTransport, ORG_ASSERTION_HEADER } from '@dnc/kit';
import { admissionv1, jobsv1 } from '@dnc/proto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { admitReq, Harness, outcome } from './harness.js';

// Found by a review (2026-12-05). Two admission replicas and the real job scheduler. A v2 admission
// whose caller gave up (its reserve slow, past the gateway's budget) undoes itself: it released its
// reservation and dropped its claim. But once that claim was stale, the client's retry through the
// other replica had resumed the same admission: the same reservation (reserved again: `ok`) and the
// same job id. The retry's gateway stored the job; the first replica released the reservation; the job
// ran and its settlement's commit answered `released`: a job nobody was charged for. Spec, States:
// "POST /v2/scrub ... queued | quota reserved"; Idempotency 8: an exact retry returns the same job.
// Every undo of a v2 admission now fences its job first, as the claim reconciler does.
const JOB = admissionv1.RequestKind.JOB;
const h = new Harness();

beforeAll(async () => {
  await h.start({}, undefined, { scheduler: true });
  await h.addInstance();
  await h.adapter('mx');
}, 60_000);

afterAll(async () => {
  await h.stop();
});

async function until<T>(what: string, read: () => Promise<T | undefined>, ms = 10_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const value = await read();
    if (value !== undefined) return value;
    if (Date.now() > end) throw new Error(`timed out waiting until ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const reservationState = async (id: string) =>
  (await h.sql('SELECT state FROM quota.reservations WHERE reservation_id = $1', [id])).rows[0]?.state as
    | string
    | undefined;

describe('a v2 admission undone by a replica whose caller gave up, resumed meanwhile by a retry', () => {
  it('never leaves a stored job without its reservation', async () => {
    const c = await h.customer(['mx'], 1_000);
    // The organization's quota account exists (one admission reserved, then aborted).
    const warm = await h.clients(0).admission.admit(admitReq(c, { kind: JOB, inputCount: 1 }));
    await h.clients(0).admission.abort({ admissionId: warm.admissionId });

    // Quota's account row is locked: every reserve of this organization waits.
    const holder = new pg.Client({ connectionString: h.databaseUrl });
    await holder.connect();
    await holder.query('BEGIN');
    await holder.query('SELECT 1 FROM quota.accounts WHERE org_id = $1 FOR UPDATE', [c.orgId]);

    const req = admitReq(c, { kind: JOB, inputCount: 7 });
    const first = outcome(h.clients(0).admission.admit(req, { timeoutMs: 2_000 }));
    const claim = await until('the first admission holds its claim', async () => {
      const r = await h.sql(
        'SELECT admission_id, job_id FROM admission.idempotency_records WHERE key_id = $1',
        [c.keyId],
      );
      return r.rows[0] as { admission_id: string; job_id: string } | undefined;
    });
    // The claim is stale (as after DNC_JOB_CLAIM_TIMEOUT_SECONDS): the retry through replica 2 resumes it.
    await h.sql(
      "UPDATE admission.idempotency_records SET claimed_at = now() - interval '1 minute' WHERE admission_id = $1",
      [claim.admission_id],
    );
    const second = h.clients(1).admission.admit(req, { timeoutMs: 30_000 });
    await until('both reserves wait for the lock', async () => {
      const r = await h.sql(
        `SELECT count(*)::int AS n FROM pg_stat_activity
          WHERE datname = current_database() AND wait_event_type = 'Lock' AND query ILIKE '%reserve%'`,
      );
      return r.rows[0].n >= 2 ? true : undefined;
    });
    expect(await first).not.toBe('ok');
    await holder.query('COMMIT');
    await holder.end();
    const resumed = await second;

    // The retry's gateway stores the job it was given, as the gateway does.
    const jobs = createClient(
      jobsv1.JobsService,
      grpcTransport(`http://127.0.0.1:${h.scheduler!.port}`, [], {
        security: await h.pki.security('gateway'),
        peer: 'job-scheduler',
      }),
    );
    const stored = await outcome(
      jobs.submitJob(
        {
          jobId: resumed.jobId,
          orgId: c.orgId,
          reservationId: resumed.admissionId,
          country: 'mx',
          canonicalPhones: new TextEncoder().encode(JSON.stringify(Array(7).fill('5581234567'))),
        },
        {
          headers: { [ORG_ASSERTION_HEADER]: h.assertions.issue(c.orgId, 'gateway', ['job-scheduler']) },
        },
      ),
    );

    // Once the first replica's undo is over: a job stored holds its reservation; none stored holds none.
    const settled = await until('the first admission is undone or its job kept', async () => {
      const state = await reservationState(resumed.admissionId);
      const r = await h.sql('SELECT state FROM admission.idempotency_records WHERE key_id = $1', [c.keyId]);
      return state !== 'reserved' || r.rows[0]?.state === 'accepted' ? state : undefined;
    });
    expect({ stored, reservation: settled }).toEqual(
      stored === 'ok' ? { stored, reservation: 'reserved' } : { stored, reservation: 'released' },
    );
    if (stored === 'ok') expect(await h.account(c.orgId, 'mx')).toMatchObject({ reserved: 7 });
  }, 60_000);
});
