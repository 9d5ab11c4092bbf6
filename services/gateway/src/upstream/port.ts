import { Code, ConnectError, ORG_ASSERTION_HEADER, type Registry } from '@dnc/kit';
import type { jobsv1 } from '@dnc/proto';
import type { Upstream } from '../flows/port.js';
import { batchedCalls } from './batching.js';
import type { UpstreamClients } from './clients.js';

/** The header that carries admission's organization assertion to the job scheduler. */
const asserting = (orgAssertion: string) => ({ [ORG_ASSERTION_HEADER]: orgAssertion });

function present(job: jobsv1.Job | undefined): jobsv1.Job {
  if (!job) throw new ConnectError('the scheduler answered without a job', Code.Internal);
  return job;
}

/**
 * The Upstream port over Connect clients: Admit, Check and Complete share batches with the requests
 * in flight (`batching.ts`), every other call is one call of its own.
 */
export function upstreamPort(clients: UpstreamClients, metrics?: Registry): Upstream {
  const { admission, jobs } = clients;
  const batched = batchedCalls(clients, metrics);
  return {
    authenticate: (credentials, timeoutMs) => admission.authenticate(credentials, { timeoutMs }),
    admit: batched.admit,
    check: batched.check,
    complete: batched.complete,
    async abort(admissionId, timeoutMs) {
      const { completed } = await admission.abort({ admissionId }, { timeoutMs });
      return { completed };
    },
    async submitJob(request, orgAssertion, timeoutMs) {
      // The deadline as a moment too: a SubmitJob held on its way stores no job after this answered 503.
      const deadlineUnixMs = BigInt(Date.now() + timeoutMs);
      const r = await jobs.submitJob(
        { ...request, deadlineUnixMs },
        { timeoutMs, headers: asserting(orgAssertion) },
      );
      return { job: present(r.job), resumed: r.resumed };
    },
    async confirmJob(admissionId, jobId, timeoutMs) {
      await admission.confirmJob({ admissionId, jobId }, { timeoutMs });
    },
    async getJob({ orgId, orgAssertion }, jobId, timeoutMs) {
      const headers = asserting(orgAssertion);
      return present((await jobs.getJob({ orgId, jobId }, { timeoutMs, headers })).job);
    },
    async cancelJob({ orgId, orgAssertion }, jobId, timeoutMs) {
      const headers = asserting(orgAssertion);
      return present((await jobs.cancelJob({ orgId, jobId }, { timeoutMs, headers })).job);
    },
    jobResult: ({ orgId, orgAssertion }, jobId, options) =>
      jobs.getJobResult({ orgId, jobId }, { ...options, headers: asserting(orgAssertion) }),
  };
}
