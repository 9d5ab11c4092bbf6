import type { Client } from '@connectrpc/connect';
import { Code, ConnectError, readPublicReason, type Security, serviceClient } from '@dnc/kit';
import { admissionv1, jobsv1, quotav1 } from '@dnc/proto';

/**
 * The only ways the dashboard reaches customer data: the organization-scoped methods of admission,
 * quota and the job scheduler. Every call names the organization of the signed-in session.
 */
export interface Upstreams {
  organization: Client<typeof admissionv1.OrganizationService>;
  quota: Client<typeof quotav1.OrganizationQuotaService>;
  jobs: Client<typeof jobsv1.OrganizationJobsService>;
}

/** Called with the dashboard's own certificate; each server must prove the identity it is meant to be. */
export function createUpstreams(
  addr: { admission: string; quota: string; jobs: string },
  security: Security,
): Upstreams {
  return {
    organization: serviceClient(admissionv1.OrganizationService, addr.admission, 5_000, {
      security,
      peer: 'admission',
    }),
    quota: serviceClient(quotav1.OrganizationQuotaService, addr.quota, 5_000, { security, peer: 'quota' }),
    jobs: serviceClient(jobsv1.OrganizationJobsService, addr.jobs, 5_000, {
      security,
      peer: 'job-scheduler',
    }),
  };
}

/** An error the backend answers the browser with: status and a stable code (and a message to show). */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message?: string,
  ) {
    super(message ?? code);
  }
}

/** Another organization's row and a missing one: the same status and the same body, always. */
export const notFound = () => new HttpError(404, 'not_found', 'Not found.');

/**
 * An upstream failure as the browser sees it: NOT_FOUND of any kind is the one `not_found`, a validation
 * or precondition error keeps its reason and message, anything else is 503 without internals.
 */
export function fromUpstream(error: unknown): HttpError {
  if (error instanceof HttpError) return error;
  const ce = ConnectError.from(error);
  const reason = readPublicReason(error);
  if (ce.code === Code.NotFound) return notFound();
  if (ce.code === Code.InvalidArgument)
    return new HttpError(400, 'validation_error', reason?.message || 'The request is not valid.');
  if (ce.code === Code.FailedPrecondition && reason)
    return new HttpError(409, reason.reason, reason.message || 'Not possible in the current state.');
  return new HttpError(503, 'unavailable', 'A platform service is unavailable; try again shortly.');
}
