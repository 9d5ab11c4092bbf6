import { randomUUID } from 'node:crypto';
import { Code, ConnectError } from '@dnc/kit';
import { admissionv1, jobsv1 } from '@dnc/proto';
import type { FastifyInstance } from 'fastify';
import { guards, who } from '../session.js';
import { fromUpstream, HttpError, notFound } from '../upstream.js';
import { body, iso, type RouteDeps, UUID } from './deps.js';

const STAGE: Record<number, string> = {
  [admissionv1.PurchaseStage.PENDING_PAYMENT]: 'pending_payment',
  [admissionv1.PurchaseStage.ACTIVATION_PENDING]: 'activation_pending',
  [admissionv1.PurchaseStage.ACTIVE]: 'active',
  [admissionv1.PurchaseStage.LAPSED]: 'lapsed',
};
/** A job state's public name (`queued`, ...) from the protobuf enum, and back. */
const stateName = (status: jobsv1.JobStatus) => (jobsv1.JobStatus[status] ?? 'unknown').toLowerCase();
function stateOf(name: string): jobsv1.JobStatus | undefined {
  const status = jobsv1.JobStatus[name.toUpperCase() as keyof typeof jobsv1.JobStatus];
  return status && /^[a-z]+$/.test(name) ? status : undefined;
}

function key(k: admissionv1.OrganizationKey) {
  return {
    id: k.keyId,
    name: k.name,
    prefix: k.prefix,
    created_at: iso(k.createdAt),
    last_used_at: iso(k.lastUsedAt),
    revoked_at: iso(k.revokedAt),
  };
}

/** A job as the dashboard shows it: the public resource's fields, never an input or a result. */
function job(j: jobsv1.OrganizationJob) {
  const p = j.job!;
  return {
    id: p.jobId,
    status: stateName(p.status),
    country: p.country,
    submitted_count: p.submittedCount,
    created_at: iso(p.createdAt),
    started_at: iso(j.startedAt),
    finished_at: iso(j.finishedAt),
    expires_at: iso(p.expiresAt),
    error: p.error?.error ?? null,
    cancel_requested: p.cancelRequested,
  };
}

/** Jobs per page of the jobs list: the default and the most a page may ask for. */
export const DEFAULT_JOBS_PAGE = 25;
export const MAX_JOBS_PAGE = 100;

/** Run an upstream call; its failure becomes the browser's error (404 for anything not found). */
async function call<T>(work: Promise<T>): Promise<T> {
  try {
    return await work;
  } catch (error) {
    throw fromUpstream(error);
  }
}

/**
 * Keys, plan, quota and usage, and jobs of the signed-in person's organization. The organization is
 * always the session's: no route takes an organization id from the browser.
 */
export function organizationRoutes(app: FastifyInstance, deps: RouteDeps): void {
  keyRoutes(app, deps);
  planRoutes(app, deps);
  jobRoutes(app, deps);
}

/** API keys: list, create (the secret in this one response), revoke. */
function keyRoutes(app: FastifyInstance, deps: RouteDeps): void {
  const { signedIn, owner, confirmedOwner } = guards(deps);
  const { organization } = deps.upstreams;

  app.get('/api/keys', { preHandler: signedIn }, async (request) => {
    const { keys } = await call(organization.listKeys({ orgId: who(request).member.orgId }));
    return { keys: keys.map(key) };
  });

  app.post(
    '/api/keys',
    { preHandler: confirmedOwner('key.create'), schema: { body: body({ name: 200 }) } },
    async (request, reply) => {
      const { member } = who(request);
      const orgId = member.orgId;
      // Each key is shown once (spec): a key whose secret this response cannot carry (the call's outcome
      // unknown, its audit entry not written) is revoked by the id chosen here, never left active with
      // nobody holding it. Found by a review (2026-12-05).
      const keyId = randomUUID();
      try {
        const name = (request.body as { name: string }).name;
        const created = await call(organization.createKey({ orgId, name, keyId }));
        await deps.audit.record(
          orgId,
          member.email,
          'key_created',
          `${created.key!.name} (${created.key!.prefix})`,
        );
        // The one response that carries the secret; no-store like every /api response.
        return reply.code(201).send({ key: key(created.key!), secret: created.apiKey });
      } catch (error) {
        await organization.revokeKey({ orgId, keyId }).then(
          ({ revokedNow }) => {
            if (revokedNow) request.log.warn({ key_id: keyId }, 'key created but not handed over: revoked');
          },
          (e: unknown) => {
            if (ConnectError.from(e).code !== Code.NotFound)
              request.log.error({ key_id: keyId }, 'key not handed over and not revoked: revoke it');
          },
        );
        throw error;
      }
    },
  );

  app.post('/api/keys/:keyId/revoke', { preHandler: owner('key.revoke') }, async (request) => {
    const { member } = who(request);
    const { keyId } = request.params as { keyId: string };
    if (!UUID.test(keyId)) throw notFound();
    const { key: revoked, revokedNow } = await call(organization.revokeKey({ orgId: member.orgId, keyId }));
    // Revoking a revoked key answers the same and records nothing: the log says when it was revoked, once.
    if (revokedNow)
      await deps.audit.record(
        member.orgId,
        member.email,
        'key_revoked',
        `${revoked!.name} (${revoked!.prefix})`,
      );
    return { key: key(revoked!) };
  });
}

/** Purchases and the country catalog; this month's quota and the daily usage. */
function planRoutes(app: FastifyInstance, deps: RouteDeps): void {
  const { signedIn } = guards(deps);
  const { organization, quota } = deps.upstreams;

  app.get('/api/plan', { preHandler: signedIn }, async (request) => {
    const orgId = who(request).member.orgId;
    const [{ purchases }, { countries }] = await Promise.all([
      call(organization.listPurchases({ orgId })),
      call(organization.getCatalog({})),
    ]);
    return {
      purchases: purchases.map((p) => ({
        id: p.purchaseId,
        country: p.country,
        state: STAGE[p.stage] ?? 'unknown',
        monthly_quota: Number(p.monthlyQuota),
        created_at: iso(p.createdAt),
        paid_at: iso(p.paidAt),
        activated_at: iso(p.activatedAt),
        lapsed_at: iso(p.lapsedAt),
      })),
      countries: countries.map((c) => ({
        country: c.country,
        coverage: c.coverage === admissionv1.Coverage.LIVE ? 'live' : 'planned',
        planned_for: c.plannedFor || null,
        maintenance_until: iso(c.maintenanceUntil),
      })),
    };
  });

  app.get('/api/usage', { preHandler: signedIn }, async (request) => {
    const orgId = who(request).member.orgId;
    const [month, daily] = await Promise.all([
      call(quota.getMonthQuota({ orgId })),
      call(quota.getDailyUsage({ orgId, days: 90 })),
    ]);
    return {
      period: month.accounts[0]?.period ?? new Date().toISOString().slice(0, 7),
      accounts: month.accounts.map((a) => ({
        country: a.country,
        limit: Number(a.limit),
        used: Number(a.used),
        reserved: Number(a.reserved),
      })),
      from_day: daily.fromDay,
      days: daily.days.map((d) => ({
        day: d.day,
        country: d.country,
        v1: Number(d.v1Count),
        v2: Number(d.v2Count),
      })),
    };
  });
}

/** The organization's v2 jobs: list with a state filter, detail, cancel. */
function jobRoutes(app: FastifyInstance, deps: RouteDeps): void {
  const { signedIn, owner } = guards(deps);
  const { jobs } = deps.upstreams;

  /**
   * One page of jobs, newest first: `limit` 1 to MAX_JOBS_PAGE (default DEFAULT_JOBS_PAGE), `status` an
   * optional filter, `cursor` the `next_cursor` of the previous page (listed with the same filter).
   */
  app.get('/api/jobs', { preHandler: signedIn }, async (request) => {
    const q = request.query as { status?: unknown; limit?: unknown; cursor?: unknown };
    const status = typeof q.status === 'string' && q.status ? q.status : undefined;
    const filter = status ? stateOf(status) : undefined;
    if (status && filter === undefined)
      throw new HttpError(400, 'validation_error', 'status is not a job state');
    const limit = q.limit === undefined ? DEFAULT_JOBS_PAGE : Number(q.limit);
    if (!Number.isInteger(limit) || limit < 1 || limit > MAX_JOBS_PAGE)
      throw new HttpError(400, 'validation_error', `limit must be from 1 to ${MAX_JOBS_PAGE}`);
    const cursor = q.cursor ?? '';
    if (typeof cursor !== 'string' || !/^[A-Za-z0-9_-]{0,200}$/.test(cursor))
      throw new HttpError(400, 'validation_error', 'cursor is not a page of this list');
    const res = await call(
      jobs.listOrganizationJobs({
        orgId: who(request).member.orgId,
        status: filter ?? 0,
        limit,
        pageToken: cursor,
      }),
    );
    return { jobs: res.jobs.map(job), next_cursor: res.nextPageToken || null };
  });

  app.get('/api/jobs/:jobId', { preHandler: signedIn }, async (request) => {
    const { jobId } = request.params as { jobId: string };
    if (!UUID.test(jobId)) throw notFound();
    const res = await call(jobs.getOrganizationJob({ orgId: who(request).member.orgId, jobId }));
    return { job: job(res.job!) };
  });

  app.post('/api/jobs/:jobId/cancel', { preHandler: owner('job.cancel') }, async (request) => {
    const { member } = who(request);
    const { jobId } = request.params as { jobId: string };
    if (!UUID.test(jobId)) throw notFound();
    const res = await call(jobs.cancelOrganizationJob({ orgId: member.orgId, jobId }));
    // Only a cancel that changed something is an event: a job that had ended, or whose cancel was already
    // requested, is answered as it is and recorded nowhere (as a revoked key's revocation is not).
    if (res.cancelled) await deps.audit.record(member.orgId, member.email, 'job_cancelled', jobId);
    // `cancelled`: this request cancelled the job (or, during an external call, requested it). False: the
    // job had ended, or its cancel was already requested, and the page says so instead of a silent reload.
    return { job: job(res.job!), cancelled: res.cancelled };
  });
}
