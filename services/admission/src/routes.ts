import { create } from '@bufbuild/protobuf';
import type { ConnectRouter, HandlerContext, ServiceImpl } from '@connectrpc/connect';
import { isCountryCode } from '@dnc/api-contract/limits';
import {
  CALLER,
  Code,
  ConnectError,
  type Counter,
  commitBy,
  type OrgAssertionIssuer,
  type OrgAssertionVerifier,
  rpcStatusOf,
  validationError,
} from '@dnc/kit';
import { admissionv1, type platformv1 } from '@dnc/proto';
import { type AdminDeps, admissionAdminService } from './admin.js';
import { type AdmitDeps, admit } from './admit.js';
import { type AuthenticationDeps, authenticateKey, rateInfo } from './authentication.js';
import type { Completion } from './completion.js';
import type { Refusals } from './public-errors.js';
import type { AccountStore } from './store/index.js';

export interface AdmissionServiceDeps {
  accounts: AccountStore;
  authentication: AuthenticationDeps;
  admission: AdmitDeps;
  completion: Completion;
  refusals: Refusals;
  /**
   * Signs the organization assertion an Authenticate answer carries (docs/security.md, "Organization
   * assertions"): what the job scheduler requires before it acts for an organization.
   */
  assertions?: OrgAssertionIssuer;
  /**
   * Checks the assertion an Admit for an already authenticated caller carries; refusals counted in
   * `refused` (dnc_org_assertion_refused_total). Unset: not checked (unit tests of the handlers).
   */
  verifier?: { check: OrgAssertionVerifier['check']; refused: Counter<'caller' | 'method' | 'reason'> };
}

/** The services an organization assertion is for: Admit here, and the job scheduler's JobsService. */
export const ORG_ASSERTION_AUDIENCES = ['admission', 'job-scheduler'] as const;

/** Requests per AdmitMany / CompleteMany call. */
const MAX_BATCH = 1_000;

/**
 * The single call for each item of a batch call, concurrently: each item's answer, or the error the
 * single call would have raised (as an RpcStatus), in its place.
 */
async function eachOf<I, O>(
  items: I[],
  refusals: Refusals,
  method: string,
  one: (item: I) => Promise<O>,
): Promise<({ value: O } | { error: platformv1.RpcStatus })[]> {
  if (items.length > MAX_BATCH) throw validationError(`at most ${MAX_BATCH} requests per batch`);
  return Promise.all(
    items.map(async (item) => {
      try {
        return { value: await one(item) };
      } catch (error) {
        return { error: rpcStatusOf(refusals.toPublic(method, error)) };
      }
    }),
  );
}

/**
 * dnc.admission.v1.AdmissionService: each RPC translated to the step of the check order it runs
 * (authentication.ts: steps 0-3; admit.ts: steps 5-9; completion.ts: the end of an admission). A
 * failure that is not a public reason becomes the platform failure in the service's interceptor
 * (Refusals.interceptor), so the handlers throw what they meet.
 */
export function admissionService(
  deps: AdmissionServiceDeps,
): ServiceImpl<typeof admissionv1.AdmissionService> {
  const { accounts, authentication, admission, completion, refusals, assertions, verifier } = deps;

  const impl: ServiceImpl<typeof admissionv1.AdmissionService> = {
    async authenticate(req, ctx) {
      const { found, rate } = await authenticateKey(
        authentication,
        req.apiKey,
        req.clientAddress,
        async (id) => {
          const credential = await accounts.credential(id);
          return credential ? { credential } : undefined;
        },
      );
      const { orgId, keyId } = found.credential;
      // Issued to the caller that presented the key (the gateway), for Admit and the job scheduler, bound
      // to the key: Admit acts for that key's idempotency claims only.
      const caller = ctx.values.get(CALLER);
      const orgAssertion =
        assertions && caller
          ? assertions.issue(orgId, caller, ORG_ASSERTION_AUDIENCES, Date.now(), keyId)
          : '';
      return { orgId, keyId, rateLimit: rateInfo(rate).value, orgAssertion };
    },

    /**
     * Steps 5-9 (step 4 is the gateway's); with `credentials`, steps 0-3 first — the key's lookup reads
     * the gate facts too — and the rate-limit figures on the answer and on every error after
     * authentication.
     */
    async admit(req, ctx) {
      if (!req.credentials) {
        // The organization the caller names: only with admission's own assertion of it.
        if (verifier) {
          const caller = ctx.values.get(CALLER);
          // Found by a review (2026-12-03): the key was not bound, so a compromised gateway holding its
          // own organization's assertion could name another organization's key id (they come back from
          // every Authenticate) and claim that key's Idempotency-Keys, or take over its abandoned jobs.
          const result = verifier.check(req.orgAssertion, caller, req.orgId, Date.now(), req.keyId);
          if (!result.ok) {
            const method = 'dnc.admission.v1.AdmissionService/Admit';
            verifier.refused.inc({ caller: caller ?? 'unauthenticated', method, reason: result.reason });
            admission.logger.warn(
              { caller, method, reason: result.reason },
              'admit refused: no valid organization assertion',
            );
            throw new ConnectError(
              `${caller ?? 'caller'} has no valid organization assertion for this request (${result.reason})`,
              Code.PermissionDenied,
            );
          }
        }
        return admit(admission, req, undefined, ctx.signal);
      }
      const country = isCountryCode(req.country) ? req.country : '';
      const { found, rate } = await authenticateKey(
        authentication,
        req.credentials.apiKey,
        req.credentials.clientAddress,
        (publicId) => admission.gate.keyFacts(publicId, country),
      );
      const info = rateInfo(rate);
      try {
        const caller = { orgId: found.credential.orgId, keyId: found.credential.keyId };
        const admitted = await admit(admission, { ...req, ...caller }, found, ctx.signal);
        return { ...admitted, rateLimit: info.value };
      } catch (error) {
        const ce = refusals.toPublic('admit', error);
        ce.details.push(info);
        throw ce;
      }
    },

    async complete(req, ctx) {
      await completion.complete(req.admissionId, completionDeadline(req, ctx));
      return {};
    },

    async abort(req) {
      return completion.abort(req.admissionId);
    },

    async confirmJob(req) {
      await completion.confirmJob(req.admissionId, req.jobId);
      return {};
    },

    ...batchCalls((req, ctx) => impl.admit(req, ctx), completion, refusals),
  };
  return impl;
}

/**
 * The last moment (epoch ms) a completion may commit for its caller: its own `timeout_ms` and the moment
 * it named (`deadline_unix_ms`), less the time it took to arrive (kit `commitBy`), and the call's deadline,
 * whichever comes first; none: never.
 */
function completionDeadline(req: { timeoutMs: number; deadlineUnixMs: bigint }, ctx: HandlerContext): number {
  const now = Date.now();
  const call = ctx.timeoutMs();
  return Math.min(
    // timeout_ms 0: none (proto3's default), not a deadline already out.
    commitBy(now, req.timeoutMs > 0 ? req.timeoutMs : undefined, req.deadlineUnixMs, 'admission.Complete'),
    call !== undefined ? now + call : Number.POSITIVE_INFINITY,
  );
}

/** AdmitMany and CompleteMany: the single calls for each item, concurrently, sharing their batches. */
function batchCalls(
  admitOne: ServiceImpl<typeof admissionv1.AdmissionService>['admit'],
  completion: Completion,
  refusals: Refusals,
): Pick<ServiceImpl<typeof admissionv1.AdmissionService>, 'admitMany' | 'completeMany'> {
  return {
    /** Admit for each request of a batch, concurrently; each answer or error in its place. */
    async admitMany(req, ctx) {
      const results = await eachOf(req.requests, refusals, 'admit', async (one) =>
        create(admissionv1.AdmitResponseSchema, await admitOne(one, ctx)),
      );
      return {
        results: results.map((r) =>
          'error' in r
            ? { result: { case: 'error' as const, value: r.error } }
            : { result: { case: 'admitted' as const, value: r.value } },
        ),
      };
    },

    /** Complete for each admission of a batch, each within its own deadline; they share the completion batches. */
    async completeMany(req, ctx) {
      const results = await eachOf(req.requests, refusals, 'complete', (one) =>
        completion.complete(one.admissionId, completionDeadline(one, ctx)),
      );
      return {
        results: results.map((r) =>
          'error' in r
            ? { result: { case: 'error' as const, value: r.error } }
            : { result: { case: 'completed' as const, value: {} } },
        ),
      };
    },
  };
}

/** The services admission serves: the data plane, and the admin plane on its own listener. */
export function admissionRoutes(deps: { service: AdmissionServiceDeps; admin: AdminDeps }) {
  return {
    data: (router: ConnectRouter) => {
      router.service(admissionv1.AdmissionService, admissionService(deps.service));
    },
    admin: (router: ConnectRouter) => {
      router.service(admissionv1.AdmissionAdminService, admissionAdminService(deps.admin));
    },
  };
}
