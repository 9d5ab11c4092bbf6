import { createClient } from '@connectrpc/connect';
import { isJobStatus, isTerminalJobStatus, JOB_STATUSES } from '@dnc/api-contract/limits';
import { jobStatusOf, protoJobStatus } from '@dnc/kit';
import { jobsv1 } from '@dnc/proto';
import { type AdminEnv, type Command, operatorTransport, requireFlag, UsageError } from '../cli.js';

// Operator view of v2 jobs: identity, state, timings and history. Never numbers, never results.

function iso(ts: { seconds: bigint; nanos: number } | undefined): string | undefined {
  return ts ? new Date(Number(ts.seconds) * 1000 + Math.floor(ts.nanos / 1e6)).toISOString() : undefined;
}

function jobView(job: jobsv1.Job | undefined) {
  if (!job) return undefined;
  return {
    job_id: job.jobId,
    status: jobStatusOf(job.status) ?? 'unknown',
    country: job.country,
    submitted_count: job.submittedCount,
    created_at: iso(job.createdAt),
    expires_at: iso(job.expiresAt),
    ...(job.error ? { error: job.error.error } : {}),
    ...(job.cancelRequested ? { cancel_requested: true } : {}),
  };
}

const admin = (env: AdminEnv) =>
  createClient(jobsv1.JobsAdminService, operatorTransport(env, env.jobs, 'job-scheduler'));

export const jobsListCommand: Command = {
  name: 'jobs list',
  usage: `jobs list --org ID [--state ${JOB_STATUSES.join('|')}]`,
  options: { org: { type: 'string' }, state: { type: 'string' } },
  async run(flags, env) {
    const orgId = requireFlag(flags, 'org');
    const state = flags['state'];
    if (state !== undefined && (typeof state !== 'string' || !isJobStatus(state)))
      throw new UsageError(`--state must be one of ${JOB_STATUSES.join(', ')}`);
    const { jobs, truncated } = await admin(env).listJobs(
      { orgId, status: state ? protoJobStatus(state) : jobsv1.JobStatus.UNSPECIFIED },
      { timeoutMs: 10_000 },
    );
    // Never a silent cut: the scheduler lists the newest 500.
    return {
      jobs: jobs.map(jobView),
      ...(truncated ? { truncated: true, shown: 'the newest 500; narrow with --state' } : {}),
    };
  },
};

export const jobsShowCommand: Command = {
  name: 'jobs show',
  usage: 'jobs show --job ID',
  options: { job: { type: 'string' } },
  async run(flags, env) {
    const jobId = requireFlag(flags, 'job');
    const d = await admin(env).getJobDetail({ jobId }, { timeoutMs: 10_000 });
    const history = d.history.map((h) => ({
      status: jobStatusOf(h.status) ?? 'unknown',
      at: iso(h.at),
      note: h.note,
    }));
    const at = (s: string) => history.find((h) => h.status === s)?.at;
    const terminal = history.find((h) => isTerminalJobStatus(h.status))?.at;
    const ms = (a?: string, b?: string) => (a && b ? Date.parse(b) - Date.parse(a) : undefined);
    return {
      job: jobView(d.job),
      org_id: d.orgId,
      attempts: d.attempts,
      timings_ms: {
        queued_to_running: ms(at('queued'), at('running')),
        running_to_terminal: ms(at('running'), terminal),
        total: ms(at('queued'), terminal),
      },
      history,
    };
  },
};

export const jobsCleanupStatusCommand: Command = {
  name: 'jobs cleanup-status',
  usage: 'jobs cleanup-status',
  options: {},
  async run(_flags, env) {
    const s = await admin(env).getCleanupStatus({}, { timeoutMs: 10_000 });
    return {
      pending: Number(s.pending),
      failed: Number(s.failed),
      tasks: s.tasks.map((t) => ({
        job_id: t.jobId,
        target: t.target,
        attempts: t.attempts,
        last_error: t.lastError || undefined,
        due_at: iso(t.dueAt),
      })),
    };
  },
};

export const jobsKeysCommand: Command = {
  name: 'jobs keys',
  usage: 'jobs keys',
  options: {},
  async run(_flags, env) {
    const { keys } = await admin(env).getKeyStatus({}, { timeoutMs: 10_000 });
    return {
      keys: keys.map((k) => ({
        kek_id: k.kekId,
        active: k.active,
        configured: k.configured,
        blobs: Number(k.blobs),
        retained_until: iso(k.retainedUntil),
        retirable: k.retirable,
      })),
    };
  },
};

export const jobsCommands: Command[] = [
  jobsListCommand,
  jobsShowCommand,
  jobsCleanupStatusCommand,
  jobsKeysCommand,
];
