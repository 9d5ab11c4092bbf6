import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { ensureDatabase, migrateSchema } from '@dnc/kit';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dropDatabase, uniqueDatabaseUrl } from '../../../test/support/stack.js';
import { checkInvariants, formatViolations, type InvariantName } from '../src/invariants.js';

// The invariant checker must catch what it claims to catch: each invariant is broken here by writing
// the stores directly (as a faulty service would leave them), and a consistent store passes.

const migrations = (service: string) =>
  fileURLToPath(new URL(`../../../services/${service}/migrations`, import.meta.url));

const PHONE = '+52 55 7788 9900';
const CANARIES = [PHONE, '5577889900'];

describe('invariant checker (issue 14)', () => {
  const databaseUrl = uniqueDatabaseUrl('invariants');
  let db: pg.Client;

  beforeAll(async () => {
    await ensureDatabase(databaseUrl);
    for (const [schema, service] of [
      ['admission', 'admission'],
      ['quota', 'quota'],
      ['jobs', 'job-scheduler'],
    ] as const)
      await migrateSchema(databaseUrl, schema, migrations(service));
    db = new pg.Client({ connectionString: databaseUrl });
    await db.connect();
  });
  afterAll(async () => {
    await db?.end();
    await dropDatabase(databaseUrl);
  });

  const period = new Date().toISOString().slice(0, 7);
  async function reservation(id: string, kind: number, state: string, amount: number, org = 'org-a') {
    await db.query(
      `INSERT INTO quota.accounts (org_id, country, period) VALUES ($1, 'mx', $2) ON CONFLICT DO NOTHING`,
      [org, period],
    );
    await db.query(
      `INSERT INTO quota.reservations (reservation_id, org_id, country, period, amount, kind, state)
       VALUES ($1, $2, 'mx', $3, $4, $5, $6)`,
      [id, org, period, amount, kind, state],
    );
    if (state === 'reserved')
      await db.query(`UPDATE quota.accounts SET reserved = reserved + $2 WHERE org_id = $1`, [org, amount]);
    if (state === 'committed') {
      await db.query(`UPDATE quota.accounts SET used = used + $2 WHERE org_id = $1`, [org, amount]);
      await db.query(
        `INSERT INTO quota.usage_records (reservation_id, org_id, country, period, count, kind)
         VALUES ($1, $2, 'mx', $3, $4, $5)`,
        [id, org, period, amount, kind],
      );
    }
  }
  async function claim(admissionId: string, kind: number, state: string, jobId: string | null) {
    await db.query(
      `INSERT INTO admission.idempotency_records (key_id, key_hash, fingerprint, kind, state, admission_id, job_id)
       VALUES ($1, $2, 'v1:00', $3, $4, $5, $6)`,
      [randomUUID(), Buffer.from(randomUUID()), kind, state, admissionId, jobId],
    );
  }
  async function job(status: string, opts: { settled?: boolean; count?: number } = {}) {
    const id = randomUUID();
    const admission = randomUUID();
    const terminal = !['queued', 'running'].includes(status);
    await db.query(
      `INSERT INTO jobs.jobs (id, org_id, country, status, submitted_count, reservation_id, hard_cap_at,
         terminal_at, error, quota_settlement, quota_settled_at, attempts)
       VALUES ($1, 'org-a', 'mx', $2, $3, $4, now() + interval '1 day', $5, $6, $7, $8, 1)`,
      [
        id,
        status,
        opts.count ?? 3,
        admission,
        terminal ? new Date() : null,
        status === 'failed' ? 'platform_failure' : null,
        terminal ? (status === 'succeeded' ? 'commit' : 'release') : null,
        terminal && opts.settled !== false ? new Date() : null,
      ],
    );
    return { id, admission };
  }
  async function blob(jobId: string, kind: 'input' | 'result', segments = 1) {
    await db.query(
      `INSERT INTO jobs.job_blobs (job_id, kind, kek_id, wrapped_dek, segment_count, byte_length)
       VALUES ($1, $2, 'k1', '\\x00', $3, 10)`,
      [jobId, kind, segments],
    );
    await db.query(
      `INSERT INTO jobs.job_blob_segments (job_id, kind, seq, sealed) VALUES ($1, $2, 0, '\\x01')`,
      [jobId, kind],
    );
  }
  const reset = () =>
    db.query(`TRUNCATE jobs.jobs, jobs.job_blobs, jobs.job_blob_segments, jobs.job_transitions, quota.accounts,
              quota.reservations, quota.usage_records, admission.idempotency_records CASCADE`);
  const names = (v: { invariant: InvariantName }[]) => [...new Set(v.map((x) => x.invariant))].sort();

  it('a consistent store passes: a succeeded job charged once, a failed one released, a completed v1 request charged once', async () => {
    await reset();
    const ok = await job('succeeded');
    await blob(ok.id, 'result');
    await reservation(ok.admission, 2, 'committed', 3);
    await claim(ok.admission, 2, 'accepted', ok.id);
    const failed = await job('failed');
    await reservation(failed.admission, 2, 'released', 3);
    await claim(failed.admission, 2, 'accepted', failed.id);
    const v1 = randomUUID();
    await reservation(v1, 1, 'committed', 5);
    await claim(v1, 1, 'completed', null);
    const violations = await checkInvariants(
      { databaseUrl, canaries: CANARIES, logs: [{ source: 'job-worker', text: 'nothing to see\n' }] },
      {},
    );
    expect(violations, formatViolations(violations)).toEqual([]);
  });

  it('finds each broken invariant, and names ids and counts only — never the number it found', async () => {
    await reset();
    await job('running'); // job_terminal (and no claim: one_job_per_key)
    const failed = await job('failed');
    await blob(failed.id, 'result'); // job_result
    await reservation(failed.admission, 2, 'committed', 3); // job_settled: charged for a failure
    const leftover = await job('succeeded');
    await blob(leftover.id, 'result');
    await blob(leftover.id, 'input'); // input_purged
    await reservation(leftover.admission, 2, 'committed', 3);
    await claim(leftover.admission, 2, 'accepted', leftover.id);
    const leftOpen = randomUUID();
    await reservation(leftOpen, 2, 'reserved', 7); // quota_reserved
    await claim(leftOpen, 2, 'accepted', randomUUID()); // what is known of it, named in the detail
    await db.query(`UPDATE quota.accounts SET used = used + 1`); // quota_used
    const unresolved = randomUUID();
    await claim(unresolved, 2, 'in_progress', randomUUID()); // one_job_per_key: unresolved admission
    const doubleCharge = randomUUID();
    await reservation(doubleCharge, 1, 'committed', 2); // one_charge_per_request
    await claim(doubleCharge, 1, 'in_progress', null);
    await db.query(`INSERT INTO jobs.job_transitions (job_id, status, note) VALUES ($1, 'failed', $2)`, [
      failed.id,
      `oops ${PHONE}`,
    ]); // no_plaintext
    const call = (attempt: number, tryNo: number) =>
      JSON.stringify({
        msg: 'adapter call',
        job_id: leftover.id,
        attempt,
        unit: 0,
        try: tryNo,
        max_tries: 2,
      });
    const logs = [
      { source: 'job-worker', text: [call(1, 1), call(1, 2), call(1, 3), call(2, 1)].join('\n') },
      { source: 'gateway', text: `{"msg":"x","k":"dnc_0123456789ab_${'A'.repeat(43)}"} ${CANARIES[1]}` },
    ];
    const violations = await checkInvariants({ databaseUrl, canaries: CANARIES, logs });
    expect(names(violations)).toEqual([
      'adapter_calls',
      'input_purged',
      'job_result',
      'job_settled',
      'job_terminal',
      'no_plaintext',
      'one_charge_per_request',
      'one_job_per_key',
      'quota_reserved',
      'quota_used',
    ]);
    const text = formatViolations(violations);
    for (const form of [...CANARIES, '77889900', '7788 9900', 'dnc_0123456789ab'])
      expect(text).not.toContain(form);
    expect(text).toContain(`job ${leftover.id} attempt 1 called the adapter 3 times for unit 0 (at most 2)`);
    expect(text).toMatch(
      new RegExp(
        `job reservation ${leftOpen} still open after \\d+ s \\(claim: accepted \\d+ s; job: none\\)`,
      ),
    );
    expect(text).toContain(`job ${leftover.id} called the adapter under attempt 2 but records 1 attempt(s)`);
    expect(text).toContain(`v2 admission ${unresolved} unresolved`);
    expect(text).toContain(`v1 charge ${doubleCharge} belongs to no completed request`);
  });

  it('waits up to settleMs for a stack that is still draining, and reports what is left after it', async () => {
    await reset();
    const running = await job('running');
    await reservation(running.admission, 2, 'reserved', 3);
    await claim(running.admission, 2, 'accepted', running.id);
    setTimeout(() => {
      void (async () => {
        await db.query(
          `UPDATE jobs.jobs SET status = 'succeeded', terminal_at = now(), quota_settlement = 'commit',
             quota_settled_at = now() WHERE id = $1`,
          [running.id],
        );
        await db.query(
          `INSERT INTO jobs.job_blobs (job_id, kind, kek_id, wrapped_dek, segment_count, byte_length)
                        VALUES ($1, 'result', 'k1', '\\x00', 0, 0)`,
          [running.id],
        );
        await db.query(`UPDATE quota.reservations SET state = 'committed' WHERE reservation_id = $1`, [
          running.admission,
        ]);
        await db.query(`UPDATE quota.accounts SET reserved = 0, used = 3`);
        await db.query(
          `INSERT INTO quota.usage_records (reservation_id, org_id, country, period, count, kind)
           VALUES ($1, 'org-a', 'mx', $2, 3, 2)`,
          [running.admission, period],
        );
      })();
    }, 600);
    expect(names(await checkInvariants({ databaseUrl }, { settleMs: 0 }))).toEqual([
      'job_terminal',
      'quota_reserved',
    ]);
    expect(await checkInvariants({ databaseUrl }, { settleMs: 5_000 })).toEqual([]);
  });
});
