import { randomUUID } from 'node:crypto';
import { create } from '@bufbuild/protobuf';
import type { Client, ServiceImpl } from '@connectrpc/connect';
import {
  type AdapterDirectory,
  Batcher,
  Code,
  ConnectError,
  Counter,
  type Logger,
  publicError,
  type Registry,
  readPublicReason,
  rpcStatusOf,
} from '@dnc/kit';
import { admissionv1, quotav1 } from '@dnc/proto';
import { digestMatches, parseApiKey } from './domain/api-key.js';
import { admissionGate, type Rejection } from './domain/check-order.js';
import { isCountryCode } from './domain/countries.js';
import {
  decideIdempotency,
  hashIdempotencyKey,
  isValidFingerprint,
  isValidIdempotencyKey,
  type Kind,
} from './domain/idempotency.js';
import type { RateDecision } from './domain/rate-window.js';
import type { RequestLimiter } from './limiter.js';
import type { AdmissionStore, GateFacts, KeyCredential } from './store.js';

export interface AdmissionDeps {
  store: AdmissionStore;
  limiter: RequestLimiter;
  directory: AdapterDirectory;
  quota: Client<typeof quotav1.QuotaService>;
  logger: Logger;
  metrics: Registry;
  defaultRateLimit: number;
  syncClaimMs: number;
  jobClaimMs: number;
}

const KIND: Record<number, Kind | undefined> = {
  [admissionv1.RequestKind.SYNC]: 'sync',
  [admissionv1.RequestKind.JOB]: 'job',
};
const USAGE_KIND: Record<Kind, quotav1.UsageKind> = { sync: 1, job: 2 };
/** Requests per AdmitMany / CompleteMany call. */
const MAX_BATCH = 1_000;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

function rateInfo(rate: RateDecision) {
  return {
    desc: admissionv1.RateLimitInfoSchema,
    value: create(admissionv1.RateLimitInfoSchema, {
      limit: rate.limit,
      remaining: rate.remaining,
      resetUnix: BigInt(rate.resetUnix),
    }),
  };
}

function invalid(message: string): ConnectError {
  return publicError(Code.InvalidArgument, 'validation_error', { message });
}

function requireUuid(value: string, name: string): string {
  if (!UUID.test(value)) throw invalid(`${name} must be a lowercase UUID`);
  return value;
}

export function admissionService(deps: AdmissionDeps): ServiceImpl<typeof admissionv1.AdmissionService> {
  const { store, limiter, quota, directory } = deps;
  const rejections = new Counter({
    name: 'dnc_admission_rejections_total',
    help: 'Requests refused by admission, by public reason.',
    labelNames: ['reason'],
    registers: [deps.metrics],
  });
  const reject = (error: ConnectError): ConnectError => {
    rejections.inc({ reason: readPublicReason(error)?.reason ?? 'internal' });
    return error;
  };
  const fromRejection = (r: Rejection, country: string) =>
    reject(
      publicError(r.code, r.reason, {
        message: r.message,
        country,
        ...(r.retryAfterSeconds !== undefined ? { retryAfterSeconds: r.retryAfterSeconds } : {}),
      }),
    );
  const platformFailure = () =>
    publicError(Code.Unavailable, 'platform_failure', {
      message: 'A platform component is unavailable; retry later.',
      retryAfterSeconds: 2,
    });

  /**
   * Reservations go to quota in batches (ReserveMany: one Postgres round trip for all of them), each
   * with the answer the single Reserve would give.
   */
  const reservations = new Batcher<quotav1.ReserveRequest, void>(
    async (items) => {
      const res = await quota.reserveMany({ reservations: items });
      return res.outcomes.map((outcome, i) => {
        switch (outcome) {
          case quotav1.ReserveOutcome.OK:
            return undefined;
          case quotav1.ReserveOutcome.QUOTA_EXCEEDED:
            return reject(
              publicError(Code.ResourceExhausted, 'customer_quota_exceeded', {
                message: 'The monthly quota of this country is used up; ask for a higher quota.',
                country: items[i]!.country,
              }),
            );
          case quotav1.ReserveOutcome.ID_CONFLICT:
            return new ConnectError(
              'reservation id already used for another reservation',
              Code.AlreadyExists,
            );
          case quotav1.ReserveOutcome.RELEASED:
            return new ConnectError('reservation already released', Code.FailedPrecondition);
          default:
            return new ConnectError('quota answered no outcome', Code.Internal);
        }
      });
    },
    { maxBatch: 256, maxInFlight: 2, sameTurn: true },
  );

  /** Reserve through the quota service, as one item of a batch. */
  function reserve(admissionId: string, orgId: string, country: string, amount: number, kind: Kind) {
    return reservations.submit(
      create(quotav1.ReserveRequestSchema, {
        reservationId: admissionId,
        orgId,
        country,
        amount: BigInt(amount),
        kind: USAGE_KIND[kind],
      }),
    );
  }

  /**
   * Steps 0-3 of CHECK_ORDER for a presented key. `lookup` reads the key's credential by public id
   * (with whatever else the caller needs from the same query).
   */
  async function authenticateKey<T extends { credential: KeyCredential }>(
    apiKey: string,
    clientAddress: string,
    lookup: (publicId: string) => Promise<T | undefined>,
  ): Promise<{ found: T; rate: RateDecision }> {
    const blockedFor = await limiter.addressBlockedSeconds(clientAddress);
    if (blockedFor > 0) {
      throw reject(
        publicError(Code.ResourceExhausted, 'temporarily_blocked', {
          message: 'Too many failed authentications from this address; wait before retrying.',
          retryAfterSeconds: blockedFor,
        }),
      );
    }
    const parsed = parseApiKey(apiKey);
    const found = parsed ? await lookup(parsed.publicId) : undefined;
    const credential = found?.credential;
    const matches = parsed ? digestMatches(parsed.digest, credential?.digest) : false;
    if (!parsed || !found || !credential || !matches || credential.revoked) {
      await limiter.recordAuthFailure(clientAddress);
      throw reject(publicError(Code.Unauthenticated, 'invalid_key'));
    }
    const limit = credential.rateLimit ?? deps.defaultRateLimit;
    const verdict = await limiter.countRequest(credential.orgId, limit);
    if (verdict.kind === 'blocked') {
      throw reject(
        publicError(Code.ResourceExhausted, 'temporarily_blocked', {
          message: 'Requests far past the rate limit; this account is blocked for a while.',
          retryAfterSeconds: verdict.retryAfterSeconds,
          details: [rateInfo(verdict.rate)],
        }),
      );
    }
    if (verdict.kind === 'limited') {
      throw reject(
        publicError(Code.ResourceExhausted, 'rate_limit_exceeded', {
          message: 'Rate limit exceeded; retry after the window resets.',
          retryAfterSeconds: Math.max(1, verdict.rate.resetUnix - Math.floor(Date.now() / 1000)),
          details: [rateInfo(verdict.rate)],
        }),
      );
    }
    return { found, rate: verdict.rate };
  }

  /**
   * v1 admissions this process made and has not completed or aborted yet (admission id -> when). A
   * Complete of one of them needs no read of its claim: it is a v1 claim in progress. Anything else
   * (another replica's admission, a late or repeated Complete) is read from Postgres. Quota stays the
   * judge either way: a reservation released meanwhile is never committed.
   */
  const openSync = new Map<string, number>();
  const forgetOpen = setInterval(() => {
    const before = Date.now() - 2 * deps.syncClaimMs;
    for (const [id, at] of openSync) if (at < before) openSync.delete(id);
  }, 60_000);
  forgetOpen.unref();

  /**
   * v1 completions go in batches: the claims of a batch are read in one statement (those not made
   * here), their reservations committed in one quota call and the claims marked completed in one
   * statement. The order per claim is the single call's: commit first, then mark completed.
   */
  const completions = new Batcher<string, void>(
    async (ids) => {
      const unknown = ids.filter((id) => !openSync.has(id));
      const claims = unknown.length > 0 ? await store.claimsByAdmission(unknown) : new Map();
      const claimOf = (id: string) =>
        openSync.has(id) ? { kind: 'sync', state: 'in_progress' } : claims.get(id);
      const results: (undefined | Error)[] = ids.map((id) =>
        claimOf(id)?.kind === 'sync'
          ? undefined
          : new ConnectError('no v1 admission in progress with this id', Code.FailedPrecondition),
      );
      const open = [...new Set(ids.filter((id, i) => !results[i] && claimOf(id)?.state !== 'completed'))];
      const committed = await commitReservations(open);
      ids.forEach((id, i) => {
        const failure = committed.get(id);
        if (!results[i] && failure) results[i] = failure;
      });
      await store.markCompleted(open.filter((id) => !committed.get(id)));
      for (const id of open) openSync.delete(id);
      return results;
    },
    { maxBatch: 256, maxInFlight: 2, sameTurn: true },
  );

  /** Commit reservations in one CommitMany; the map holds an Error for each id whose commit failed. */
  async function commitReservations(ids: string[]): Promise<Map<string, Error | undefined>> {
    const out = new Map<string, Error | undefined>();
    if (ids.length === 0) return out;
    const res = await quota.commitMany({ reservationIds: ids });
    ids.forEach((id, i) => {
      const outcome = res.outcomes[i];
      out.set(
        id,
        outcome === quotav1.CommitOutcome.COMMITTED
          ? undefined
          : outcome === quotav1.CommitOutcome.RELEASED
            ? new ConnectError('reservation already released', Code.FailedPrecondition)
            : new ConnectError('unknown reservation', Code.NotFound),
      );
    });
    return out;
  }

  /** A dependency failing is a platform failure for the caller; public reasons pass unchanged. */
  function toPublic(method: string, error: unknown): ConnectError {
    if (readPublicReason(error)) return ConnectError.from(error);
    const ce = ConnectError.from(error);
    if (ce.code === Code.FailedPrecondition || ce.code === Code.NotFound) return ce;
    deps.logger.error({ method, err: error }, 'admission dependency failed');
    return reject(platformFailure());
  }

  /** Steps 5-9 for an authenticated caller; `known` holds the gate facts when authentication read them. */
  async function admitAuthenticated(
    req: admissionv1.AdmitRequest,
    known: GateFacts | undefined,
  ): Promise<Omit<admissionv1.AdmitResponse, '$typeName' | '$unknown'>> {
    const orgId = requireUuid(req.orgId, 'org_id');
    const keyId = requireUuid(req.keyId, 'key_id');
    const kind = KIND[req.kind];
    if (!kind) throw invalid('kind must be SYNC or JOB');
    if (!isCountryCode(req.country)) throw invalid('country must be one of mx, ar, co, es, au, sg');
    if (!isValidIdempotencyKey(req.idempotencyKey))
      throw invalid('Idempotency-Key must be 1 to 255 visible ASCII characters without spaces');
    if (!isValidFingerprint(req.fingerprint)) throw invalid('fingerprint is malformed');
    const country = req.country;

    // 5-7: organization, purchase, activation and availability.
    const facts = known ?? (await store.gateFacts(orgId, country));
    const nowMs = Date.now();
    const rejection = admissionGate({
      country,
      organization: facts.organization,
      purchase: facts.purchase,
      maintenanceUntilMs: facts.maintenanceUntil?.getTime(),
      adapters: directory.instances(country, nowMs).map((a) => ({
        status: a.status,
        ...(a.maintenance_until ? { maintenanceUntilMs: Date.parse(a.maintenance_until) } : {}),
      })),
      nowMs,
    });
    if (rejection) throw fromRejection(rejection, country);
    const adapterAddress = kind === 'sync' ? (directory.pick(country)?.address ?? '') : '';
    if (kind === 'sync' && !adapterAddress) {
      // The adapter went away between the gate and the pick.
      throw reject(
        publicError(Code.Unavailable, 'country_service_temporarily_unavailable', {
          message: 'The country service is temporarily unavailable; retry later.',
          retryAfterSeconds: 5,
          country,
        }),
      );
    }

    // 8: idempotency. A claim is taken before the reservation; any failure drops it again, so a
    // request refused here or by quota does not consume its Idempotency-Key.
    const keyHash = hashIdempotencyKey(req.idempotencyKey);
    const admissionId = randomUUID();
    const jobId = kind === 'job' ? randomUUID() : null;
    const existing = await store.claim(keyId, keyHash, {
      fingerprint: req.fingerprint,
      kind,
      admissionId,
      jobId,
    });
    let granted: { admissionId: string; jobId: string | null; replay: boolean } = {
      admissionId,
      jobId,
      replay: false,
    };
    if (existing) {
      const decision = decideIdempotency(existing, { fingerprint: req.fingerprint, kind }, Date.now(), {
        syncClaimMs: deps.syncClaimMs,
        jobClaimMs: deps.jobClaimMs,
      });
      switch (decision.action) {
        case 'reused':
          throw reject(
            publicError(Code.AlreadyExists, 'idempotency_key_reused', {
              message: 'This Idempotency-Key was used for another request; use a new key.',
            }),
          );
        case 'in_progress':
          throw reject(
            publicError(Code.Aborted, 'idempotency_request_in_progress', {
              message: 'The original request is still being processed; retry with the same key.',
              retryAfterSeconds: decision.retryAfterSeconds,
            }),
          );
        case 'replay':
          return {
            admissionId: existing.admissionId,
            replay: true,
            jobId: existing.jobId ?? '',
            adapterAddress,
          };
        case 'reclaim': {
          // The owner died. Its reservation goes back, unless it was committed: then the request was
          // in fact completed (the owner died between the commit and marking the record), and this
          // retry is an exact retry of a completed request.
          const released = await quota.release({ reservationId: existing.admissionId });
          if (released.committed) {
            await store.markClaim(existing.admissionId, 'completed');
            return { admissionId: existing.admissionId, replay: true, jobId: '', adapterAddress };
          }
          if (!(await store.takeOver(keyId, keyHash, existing.admissionId, admissionId))) {
            throw reject(
              publicError(Code.Aborted, 'idempotency_request_in_progress', {
                message: 'The original request is still being processed; retry with the same key.',
                retryAfterSeconds: 1,
              }),
            );
          }
          break;
        }
        case 'resume': {
          // Same job identity and the same reservation: the job store is idempotent by job id.
          granted = { admissionId: existing.admissionId, jobId: existing.jobId, replay: false };
          try {
            await reserve(existing.admissionId, orgId, country, req.inputCount, kind);
          } catch (error) {
            // Released already: the job was stored and settled by the scheduler; it exists.
            if (ConnectError.from(error).code !== Code.FailedPrecondition) {
              await store.dropClaim(existing.admissionId);
              throw error;
            }
          }
          return {
            admissionId: granted.admissionId,
            replay: false,
            jobId: granted.jobId ?? '',
            adapterAddress,
          };
        }
      }
    }

    // 9: quota.
    try {
      await reserve(granted.admissionId, orgId, country, req.inputCount, kind);
    } catch (error) {
      await store.dropClaim(granted.admissionId).catch(() => {});
      if (readPublicReason(error)) throw error;
      deps.logger.error({ err: error }, 'quota reservation failed');
      throw reject(platformFailure());
    }
    if (kind === 'sync') openSync.set(granted.admissionId, Date.now());
    return { admissionId: granted.admissionId, replay: false, jobId: granted.jobId ?? '', adapterAddress };
  }

  const impl: ServiceImpl<typeof admissionv1.AdmissionService> = {
    /** Steps 0-3 of CHECK_ORDER. */
    async authenticate(req) {
      const { found, rate } = await authenticateKey(req.apiKey, req.clientAddress, async (publicId) => {
        const credential = await store.credential(publicId);
        return credential ? { credential } : undefined;
      });
      return {
        orgId: found.credential.orgId,
        keyId: found.credential.keyId,
        rateLimit: rateInfo(rate).value,
      };
    },

    /**
     * Steps 5-9 of CHECK_ORDER (step 4 is the gateway's); with `credentials`, steps 0-3 first and the
     * rate-limit figures on the answer and on every error after authentication.
     */
    async admit(req) {
      if (!req.credentials) return admitAuthenticated(req, undefined);
      const country = isCountryCode(req.country) ? req.country : '';
      const { found, rate } = await authenticateKey(
        req.credentials.apiKey,
        req.credentials.clientAddress,
        (publicId) => store.keyFacts(publicId, country),
      );
      const info = rateInfo(rate);
      try {
        const admitted = await admitAuthenticated(
          { ...req, orgId: found.credential.orgId, keyId: found.credential.keyId },
          found,
        );
        return { ...admitted, rateLimit: info.value };
      } catch (error) {
        const ce = toPublic('admit', error);
        ce.details.push(info);
        throw ce;
      }
    },

    async complete(req) {
      await completions.submit(requireUuid(req.admissionId, 'admission_id'));
      return {};
    },
    /** Admit for each request of a batch, concurrently; each answer or error in its place. */
    async admitMany(req, ctx) {
      if (req.requests.length > MAX_BATCH) throw invalid(`at most ${MAX_BATCH} requests per batch`);
      const results = await Promise.all(
        req.requests.map(async (one) => {
          try {
            const admitted = create(admissionv1.AdmitResponseSchema, await impl.admit(one, ctx));
            return { result: { case: 'admitted' as const, value: admitted } };
          } catch (error) {
            return { result: { case: 'error' as const, value: rpcStatusOf(toPublic('admit', error)) } };
          }
        }),
      );
      return { results };
    },

    /** Complete for each admission of a batch; they share the completion batches. */
    async completeMany(req, ctx) {
      if (req.requests.length > MAX_BATCH) throw invalid(`at most ${MAX_BATCH} requests per batch`);
      const results = await Promise.all(
        req.requests.map(async (one) => {
          try {
            await impl.complete(one, ctx);
            return { result: { case: 'completed' as const, value: {} } };
          } catch (error) {
            return { result: { case: 'error' as const, value: rpcStatusOf(toPublic('complete', error)) } };
          }
        }),
      );
      return { results };
    },

    async abort(req) {
      const admissionId = requireUuid(req.admissionId, 'admission_id');
      openSync.delete(admissionId);
      // A completed request or a confirmed job is past the point of no return: abort changes nothing.
      const claim = await store.claimByAdmission(admissionId);
      if (claim && claim.state !== 'in_progress') return {};
      await quota.release({ reservationId: admissionId });
      await store.dropClaim(admissionId);
      return {};
    },

    async confirmJob(req) {
      const admissionId = requireUuid(req.admissionId, 'admission_id');
      const jobId = requireUuid(req.jobId, 'job_id');
      const claim = await store.claimByAdmission(admissionId);
      if (claim?.kind !== 'job' || claim.jobId !== jobId)
        throw new ConnectError('no job admission with this id', Code.NotFound);
      if (claim.state !== 'accepted') await store.markClaim(admissionId, 'accepted', jobId);
      return {};
    },
  };

  /**
   * A dependency failing (Postgres, quota) is a platform failure for the caller: a public reason with
   * Retry-After, never an internal message. Errors that already carry a public reason pass unchanged.
   */
  const guarded = {} as Record<string, unknown>;
  for (const [name, handler] of Object.entries(impl)) {
    guarded[name] = async (req: never, ctx: never) => {
      try {
        return await (handler as (r: never, c: never) => Promise<unknown>)(req, ctx);
      } catch (error) {
        throw toPublic(name, error);
      }
    };
  }
  return guarded as ServiceImpl<typeof admissionv1.AdmissionService>;
}
