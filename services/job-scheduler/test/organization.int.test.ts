import { randomUUID } from 'node:crypto';
import { timestampDate } from '@bufbuild/protobuf/wkt';
import { createClient } from '@connectrpc/connect';
import { grpcTransport, readPublicReason } from '@dnc/kit';
import { jobsv1 } from '@dnc/proto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_LIST } from '../src/organization.js';
import { ADMIN_LIST_MAX } from '../src/routes.js';
import { type JobsHarness, startJobsHarness } from './support/harness.js';

// Issue 16: an organization's own jobs for the dashboard (list with a state filter, detail with started
// and finished, cancel); another organization's job answers exactly like a missing one.
const S = jobsv1.JobStatus;
let h: JobsHarness;
let org: ReturnType<typeof createClient<typeof jobsv1.OrganizationJobsService>>;

async function reason(call: Promise<unknown>) {
  try {
    await call;
    return 'ok';
  } catch (error) {
    return readPublicReason(error)?.reason ?? String(error);
  }
}

beforeAll(async () => {
  h = await startJobsHarness({ registry: ['+525581234567'] });
  org = createClient(
    jobsv1.OrganizationJobsService,
    grpcTransport(h.stack.addresses.jobs, [], {
      security: await h.stack.security('dashboard'),
      peer: 'job-scheduler',
    }),
  );
}, 120_000);

afterAll(async () => {
  await h?.close();
});

describe('OrganizationJobsService', () => {
  it('lists the newest jobs first with a state filter; the detail says when the job started and finished', async () => {
    const first = await h.submit(['55 8123 4567']);
    const done = await h.waitFor(first.jobId, (j) => j.status === S.SUCCEEDED);
    await h.stack.stop('job-worker');
    let queued: jobsv1.Job;
    try {
      queued = await h.submit(['55 1111 0000', '55 1111 0001']);
      const all = await org.listOrganizationJobs({ orgId: h.org });
      expect(all.jobs.map((j) => j.job!.jobId).slice(0, 2)).toEqual([queued.jobId, first.jobId]);
      const onlyQueued = await org.listOrganizationJobs({ orgId: h.org, status: S.QUEUED });
      expect(onlyQueued.jobs.map((j) => j.job!.jobId)).toEqual([queued.jobId]);
      expect(onlyQueued.jobs[0]).toMatchObject({ job: { country: 'mx', submittedCount: 2 } });
      expect(onlyQueued.jobs[0]!.startedAt).toBeUndefined();
      expect(onlyQueued.jobs[0]!.finishedAt).toBeUndefined();

      const detail = (await org.getOrganizationJob({ orgId: h.org, jobId: first.jobId })).job!;
      expect(detail.job).toMatchObject({ jobId: first.jobId, status: S.SUCCEEDED, submittedCount: 1 });
      expect(detail.job!.expiresAt).toEqual(done.expiresAt);
      const started = timestampDate(detail.startedAt!).getTime();
      const finished = timestampDate(detail.finishedAt!).getTime();
      expect(started).toBeGreaterThanOrEqual(timestampDate(detail.job!.createdAt!).getTime());
      expect(finished).toBeGreaterThanOrEqual(started);

      const cancel = await org.cancelOrganizationJob({ orgId: h.org, jobId: queued.jobId });
      const cancelled = cancel.job!;
      expect(cancelled.job!.status).toBe(S.CANCELLED);
      expect(cancelled.finishedAt).toBeDefined();
      // Found by a review (2026-12-03): the dashboard recorded job_cancelled for every 200, a job that had
      // ended or was cancelled already included. The answer says whether this call cancelled it.
      expect(cancel.cancelled).toBe(true);
      const twice = await org.cancelOrganizationJob({ orgId: h.org, jobId: queued.jobId });
      expect(twice.job!.job!.status).toBe(S.CANCELLED);
      expect(twice.cancelled).toBe(false);
      // A terminal job keeps its state.
      const again = await org.cancelOrganizationJob({ orgId: h.org, jobId: first.jobId });
      expect(again.job!.job!.status).toBe(S.SUCCEEDED);
      expect(again.cancelled).toBe(false);
    } finally {
      await h.stack.start('job-worker');
    }
  });

  it("another organization's job: list, detail and cancel answer as for a missing id", async () => {
    const job = await h.submit(['55 2222 0000']);
    const other = randomUUID();
    expect((await org.listOrganizationJobs({ orgId: other })).jobs).toEqual([]);
    expect(await reason(org.getOrganizationJob({ orgId: other, jobId: job.jobId }))).toBe('job_not_found');
    expect(await reason(org.getOrganizationJob({ orgId: h.org, jobId: randomUUID() }))).toBe('job_not_found');
    expect(await reason(org.getOrganizationJob({ orgId: h.org, jobId: 'nope' }))).toBe('job_not_found');
    expect(await reason(org.cancelOrganizationJob({ orgId: other, jobId: job.jobId }))).toBe('job_not_found');
    expect(await reason(org.cancelOrganizationJob({ orgId: h.org, jobId: randomUUID() }))).toBe(
      'job_not_found',
    );
    const mine = (await org.getOrganizationJob({ orgId: h.org, jobId: job.jobId })).job!;
    expect(mine.job!.status).not.toBe(S.CANCELLED);
  });

  it(`limit: ${MAX_LIST} is the most, one more is refused; an unknown state is refused`, async () => {
    expect(await reason(org.listOrganizationJobs({ orgId: h.org, limit: MAX_LIST }))).toBe('ok');
    expect(await reason(org.listOrganizationJobs({ orgId: h.org, limit: MAX_LIST + 1 }))).toBe(
      'validation_error',
    );
    expect(await reason(org.listOrganizationJobs({ orgId: h.org, status: 99 as jobsv1.JobStatus }))).toBe(
      'validation_error',
    );
    expect((await org.listOrganizationJobs({ orgId: h.org, limit: 1 })).jobs).toHaveLength(1);
  });

  it('pages newest first through more jobs than one page: keyset on (created_at, id), ties and microseconds included', async () => {
    const orgX = randomUUID();
    const states = ['succeeded', 'failed', 'cancelled', 'expired'] as const;
    const errorOf = { succeeded: null, failed: 'platform_failure', cancelled: null, expired: 'job_expired' };
    // 23 terminal jobs (nothing of the scheduler touches them); two by two they share created_at, and
    // neighbouring pairs are 1 microsecond apart: a cursor rounded to milliseconds would skip or repeat.
    const made: { id: string; k: number; status: string }[] = [];
    // One base for every row, read once: each INSERT is its own transaction with its own now(), and two
    // of them on either side of a second boundary were a second apart, not tied (seen in CI).
    const base = (
      await h.db.query<{ t: string }>(`SELECT (date_trunc('second', now()) - interval '1 hour')::text AS t`)
    ).rows[0]!.t;
    for (let n = 0; n < 23; n++) {
      const status = states[n % 4]!;
      const job = { id: randomUUID(), k: Math.floor(n / 2), status };
      made.push(job);
      await h.db.query(
        `INSERT INTO jobs.jobs (id, org_id, country, status, submitted_count, reservation_id, created_at,
           hard_cap_at, terminal_at, error)
         VALUES ($1, $2, 'mx', $3, 1, $4, $7::timestamptz + make_interval(secs => $5 * 0.000001),
           now(), now(), $6)`,
        [job.id, orgX, status, randomUUID(), job.k, errorOf[status], base],
      );
    }
    const newestFirst = (jobs: typeof made) =>
      [...jobs].sort((a, b) => b.k - a.k || (a.id < b.id ? 1 : -1)).map((j) => j.id);

    async function all(limit: number, status = S.UNSPECIFIED, between?: () => Promise<void>) {
      const pages: string[][] = [];
      let pageToken = '';
      do {
        const res = await org.listOrganizationJobs({ orgId: orgX, status, limit, pageToken });
        pages.push(res.jobs.map((j) => j.job!.jobId));
        pageToken = res.nextPageToken;
        if (pages.length === 1) await between?.();
      } while (pageToken);
      return pages;
    }

    // A job created after the first page was read does not shift the next pages.
    const later = randomUUID();
    const pages = await all(5, S.UNSPECIFIED, async () => {
      await h.db.query(
        `INSERT INTO jobs.jobs (id, org_id, country, status, submitted_count, reservation_id, hard_cap_at,
           terminal_at) VALUES ($1, $2, 'mx', 'succeeded', 1, $3, now(), now())`,
        [later, orgX, randomUUID()],
      );
    });
    expect(pages.map((p) => p.length)).toEqual([5, 5, 5, 5, 3]);
    expect(pages.flat()).toEqual(newestFirst(made));
    // Read again from the start, the new job comes first.
    expect((await all(24)).flat()).toEqual([later, ...newestFirst(made)]);

    // The filter holds across pages; a page that ends the list exactly carries no token.
    const failed = made.filter((j) => j.status === 'failed');
    expect(failed).toHaveLength(6);
    const failedPages = await all(3, S.FAILED);
    expect(failedPages.map((p) => p.length)).toEqual([3, 3]);
    expect(failedPages.flat()).toEqual(newestFirst(failed));

    // A token is bound to its filter; a malformed one is refused; another organization's token pages
    // through the caller's own jobs only.
    const { nextPageToken } = await org.listOrganizationJobs({ orgId: orgX, status: S.FAILED, limit: 3 });
    expect(await reason(org.listOrganizationJobs({ orgId: orgX, limit: 3, pageToken: nextPageToken }))).toBe(
      'validation_error',
    );
    // Found by a review (2026-12-05): a time of the right shape that is no date (30 February, year 0)
    // passed Date.parse, failed in PostgreSQL and was answered as an outage (503 on the dashboard).
    const cursorAt = (a: string) =>
      Buffer.from(JSON.stringify({ a, i: randomUUID(), s: 'failed' })).toString('base64url');
    const impossible = [
      '2026-02-30T00:00:00.000000Z',
      '0000-01-01T00:00:00.000000Z',
      '2026-01-01T24:00:00.000000Z',
    ];
    for (const bad of [
      'x',
      `${nextPageToken}A`,
      'a'.repeat(300),
      Buffer.from('{}').toString('base64url'),
      ...impossible.map(cursorAt),
    ])
      expect(await reason(org.listOrganizationJobs({ orgId: orgX, status: S.FAILED, pageToken: bad }))).toBe(
        'validation_error',
      );
    const elsewhere = await org.listOrganizationJobs({
      orgId: randomUUID(),
      status: S.FAILED,
      pageToken: nextPageToken,
    });
    expect(elsewhere.jobs).toEqual([]);
  });
});

// Found by a review of the operator tools (2026-12-05): `dnc-admin jobs list` showed the newest 500 jobs
// of an organization with more, and nothing said the list was cut.
describe('JobsAdminService.ListJobs', () => {
  it(`lists the newest ${ADMIN_LIST_MAX} and says when more matched; exactly ${ADMIN_LIST_MAX} is whole`, async () => {
    const orgY = randomUUID();
    const insert = (n: number, from: number) =>
      h.db.query(
        `INSERT INTO jobs.jobs (id, org_id, country, status, submitted_count, reservation_id, created_at,
           hard_cap_at, terminal_at, error)
         SELECT gen_random_uuid(), $1, 'mx', 'cancelled', 1, gen_random_uuid()::text,
           now() - interval '1 hour' + make_interval(secs => ($3 + i) * 0.001), now(), now(), NULL
         FROM generate_series(1, $2) AS i`,
        [orgY, n, from],
      );
    await insert(ADMIN_LIST_MAX, 0);
    const whole = await h.admin.listJobs({ orgId: orgY });
    expect([whole.jobs.length, whole.truncated]).toEqual([ADMIN_LIST_MAX, false]);
    await insert(1, ADMIN_LIST_MAX);
    const cut = await h.admin.listJobs({ orgId: orgY });
    expect([cut.jobs.length, cut.truncated]).toEqual([ADMIN_LIST_MAX, true]);
    // The newest first: the one made last leads, the oldest is the one left out.
    const newest = await h.db.query<{ id: string }>(
      'SELECT id FROM jobs.jobs WHERE org_id = $1 ORDER BY created_at DESC LIMIT 1',
      [orgY],
    );
    expect(cut.jobs[0]!.jobId).toBe(newest.rows[0]!.id);
  });
});
