import { Code, ConnectError, type Registry } from '@dnc/kit';
import type { jobsv1 } from '@dnc/proto';
import type { Upstream } from '../flows/port.js';
import { batchedCalls } from './batching.js';
import type { UpstreamClients } from './clients.js';

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
      await admission.abort({ admissionId }, { timeoutMs });
    },
    async submitJob(request, timeoutMs) {
      return present((await jobs.submitJob(request, { timeoutMs })).job);
    },
    async confirmJob(admissionId, jobId, timeoutMs) {
      await admission.confirmJob({ admissionId, jobId }, { timeoutMs });
    },
    async getJob(orgId, jobId, timeoutMs) {
      return present((await jobs.getJob({ orgId, jobId }, { timeoutMs })).job);
    },
    async cancelJob(orgId, jobId, timeoutMs) {
      return present((await jobs.cancelJob({ orgId, jobId }, { timeoutMs })).job);
    },
    jobResult: (orgId, jobId, options) => jobs.getJobResult({ orgId, jobId }, options),
  };
}
