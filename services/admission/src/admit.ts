import { randomUUID } from 'node:crypto';
import { COUNTRY_CODES_MESSAGE, type CountryCode, isCountryCode } from '@dnc/api-contract/limits';
import {
  type AdapterDirectory,
  Code,
  ConnectError,
  type Logger,
  publicError,
  RESULT_TOO_LARGE_MESSAGE,
  readPublicReason,
  validationError,
} from '@dnc/kit';
import { admissionv1 } from '@dnc/proto';
import { admissionGate } from './domain/check-order.js';
import {
  decideIdempotency,
  type IdempotencyDecision,
  isValidFingerprint,
  isValidIdempotencyKey,
  type Kind,
  keyNamesOf,
  type Timeouts,
} from './domain/idempotency.js';
import type { OpenAdmissions } from './open-admissions.js';
import { inProgress, keyReused, type Refusals, rejectionError, requireUuid } from './public-errors.js';
import { QUOTA_EXCEEDED, type Reservations } from './reservations.js';
import type { GateFacts, GateFactsStore, StoredClaim } from './store/index.js';
import { jobGivenUp, type UndoDeps, undoAdmission } from './undo.js';

export interface AdmitDeps extends UndoDeps {
  gate: GateFactsStore;
  directory: AdapterDirectory;
  reservations: Reservations;
  open: OpenAdmissions;
  refusals: Refusals;
  logger: Logger;
  timeouts: Timeouts;
  /** DNC_IDEMPOTENCY_KEY_SECRET: the key of the MAC a claim names its Idempotency-Key by. */
  idempotencyKeySecret: string;
}

/** Admit's answer (without the rate-limit figures, which authentication adds). */
export type Admitted = Pick<
  admissionv1.AdmitResponse,
  'admissionId' | 'replay' | 'jobId' | 'adapterAddress' | 'adapterLookupsFree'
>;

/** The adapter a v1 request goes to, and whether its lookups cost nothing (AdmitResponse). */
interface ChosenAdapter {
  adapterAddress: string;
  adapterLookupsFree: boolean;
}

const KIND: Record<number, Kind | undefined> = {
  [admissionv1.RequestKind.SYNC]: 'sync',
  [admissionv1.RequestKind.JOB]: 'job',
};

/** An Admit request once its fields are checked. */
interface Request {
  orgId: string;
  keyId: string;
  kind: Kind;
  country: CountryCode;
  idempotencyKey: string;
  fingerprint: string;
  /** During a fingerprint secret rotation: the same request's fingerprints of the previous versions. */
  previousFingerprints: string[];
  inputCount: number;
  resultRules: string;
}

function parse(req: admissionv1.AdmitRequest): Request {
  const orgId = requireUuid(req.orgId, 'org_id');
  const keyId = requireUuid(req.keyId, 'key_id');
  const kind = KIND[req.kind];
  if (!kind) throw validationError('kind must be SYNC or JOB');
  if (!isCountryCode(req.country)) throw validationError(COUNTRY_CODES_MESSAGE);
  if (!isValidIdempotencyKey(req.idempotencyKey))
    throw validationError('Idempotency-Key must be 1 to 255 visible ASCII characters without spaces');
  if (!isValidFingerprint(req.fingerprint)) throw validationError('fingerprint is malformed');
  if (req.previousFingerprints.length > 4 || !req.previousFingerprints.every(isValidFingerprint))
    throw validationError('previous_fingerprints are malformed');
  const { idempotencyKey, fingerprint, previousFingerprints, inputCount, resultRules } = req;
  return {
    orgId,
    keyId,
    kind,
    country: req.country,
    idempotencyKey,
    fingerprint,
    previousFingerprints,
    inputCount,
    resultRules,
  };
}

/**
 * Steps 5-9 of CHECK_ORDER (domain/check-order.ts) for an authenticated caller: organization,
 * purchase and availability (5-7, the pure `admissionGate`), the idempotency claim (8) and the quota
 * reservation (9). `known` holds the gate facts when authentication read them with the key; without
 * them the caller was authenticated before this call, and its key is checked again with the gate facts
 * (still not revoked: 401 otherwise).
 *
 * `signal` is the caller's: when it gave up (deadline, cancellation) before its answer, a new admission
 * is undone at once (reservation released, claim dropped) instead of waiting for the reconciler — the
 * caller never learnt the admission id, so it cannot abort it (issue 14 item 1).
 */
export async function admit(
  deps: AdmitDeps,
  req: admissionv1.AdmitRequest,
  known: GateFacts | undefined,
  signal?: AbortSignal,
): Promise<Admitted> {
  const request = parse(req);
  // Found in a review (2026-12-05): a key revoked while a v2 body arrived (up to 45 s) was still admitted.
  // Read before anything that may replay: a revoked key gets 401 whatever its claims hold, and a failed read
  // is the platform's failure (the key unchecked, nothing replayed).
  const facts = known ?? (await deps.gate.gateFacts(request.orgId, request.keyId, request.country));
  if (!facts) throw deps.refusals.reject(publicError(Code.Unauthenticated, 'invalid_key'));
  let adapter: ChosenAdapter;
  try {
    checkResultRules(deps, request);
    adapter = passGate(deps, request, facts);
  } catch (refusal) {
    // A failed lookup keeps the gate's refusal (the retry is answered as before, never with a store error).
    const past = await replayPastGate(deps, request, refusal).catch(() => undefined);
    if (past instanceof ConnectError) throw past;
    if (past) return past;
    // Counted here, once it is the answer (a public refusal; anything else the interceptor maps and counts).
    throw readPublicReason(refusal) ? deps.refusals.reject(refusal as ConnectError) : refusal;
  }
  const claimed = await claimKey(deps, request, adapter);
  if ('answer' in claimed) return claimed.answer;
  const admission = { admissionId: claimed.admissionId, kind: request.kind, jobId: claimed.jobId };
  await reserveQuota(deps, request, admission);
  if (signal?.aborted) {
    await undoAdmission(deps, admission).catch(() => {
      deps.logger.warn(
        'undo of an admission its caller gave up did not complete; left to the claim reconciler',
      );
    });
    throw new ConnectError('the caller gave up before the admission was answered', Code.Canceled);
  }
  if (request.kind === 'sync') deps.open.add(claimed.admissionId, request.orgId);
  return { admissionId: claimed.admissionId, replay: false, jobId: claimed.jobId ?? '', ...adapter };
}

/** Refusals that say the country cannot answer now: a v1 replay, recalculated from the registry, keeps them. */
const UNAVAILABLE = new Set([
  'country_service_maintenance',
  'country_service_temporarily_unavailable',
  'platform_failure',
]);

/**
 * A request the gate (4-7) refused may be an exact retry of a request already admitted: it gets the
 * answer the claim step would give (spec, Idempotency 5 and 8). v2: its job (one that failed in a
 * maintenance window is read back during it, or after a purchase lapsed). v1: recalculated, so only when
 * the refusal is not the country's unavailability and a serving adapter is there to ask (a customer
 * charged for a request whose answer was lost gets it after the purchase lapsed). A replay reserves
 * nothing; anything else keeps the gate's refusal.
 */
async function replayPastGate(
  deps: AdmitDeps,
  request: Request,
  refusal: unknown,
): Promise<Admitted | ConnectError | undefined> {
  const existing = await deps.claims.find(
    request.keyId,
    keyNamesOf(deps.idempotencyKeySecret, request.idempotencyKey),
  );
  if (!existing) return undefined;
  const decision = decideIdempotency(existing, request, Date.now(), deps.timeouts);
  // What the key says holds whatever the gate says of this request: the same key with another country
  // or other phones is 409 idempotency_key_reused (spec, Idempotency 7), not the refusal of a country
  // the first request never named; an original still running is 409 in progress (6).
  if (decision.action === 'reused' || decision.action === 'in_progress') return keyConflict(deps, decision);
  if (decision.action !== 'replay') return undefined;
  const replay = { admissionId: existing.admissionId, replay: true };
  if (request.kind === 'job') {
    if (!existing.jobId) return undefined;
    return { ...replay, jobId: existing.jobId, adapterAddress: '', adapterLookupsFree: false };
  }
  if (UNAVAILABLE.has(readPublicReason(refusal)?.reason ?? 'platform_failure')) return undefined;
  const picked = deps.directory.pick(request.country);
  if (!picked) return undefined;
  return {
    ...replay,
    jobId: '',
    adapterAddress: picked.address,
    adapterLookupsFree: picked.provider === 'local',
  };
}

/**
 * 4, the part the gateway cannot decide alone: a v2 result estimate that fitted 25 MiB only on the
 * assumption that the country's adapters answer invalid exactly as the gateway's numbering rules do
 * (`result_rules`). It holds when every fresh adapter entry of the country announces those rules; with
 * no fresh entry there is nothing to run the job on and step 7 refuses it.
 */
function checkResultRules(deps: AdmitDeps, request: Request): void {
  if (!request.resultRules) return;
  const entries = deps.directory.instances(request.country);
  if (entries.every((e) => e.numbering_rules === request.resultRules)) return;
  throw publicError(Code.InvalidArgument, 'payload_too_large', { message: RESULT_TOO_LARGE_MESSAGE });
}

/**
 * 5-7: organization, purchase, activation and availability; the adapter a v1 request goes to, and
 * whether its lookups are free (its discovery entry announces the `local` provider: an entry without
 * one, or a remote registry's adapter, is not).
 */
function passGate(deps: AdmitDeps, request: Request, facts: GateFacts): ChosenAdapter {
  const { country, kind } = request;
  const nowMs = Date.now();
  const rejection = admissionGate({
    country,
    organization: facts.organization,
    purchase: facts.purchase,
    maintenanceUntilMs: facts.maintenanceUntil?.getTime(),
    adapters: deps.directory.instances(country, nowMs).map((a) => ({
      status: a.status,
      ...(a.maintenance_until ? { maintenanceUntilMs: Date.parse(a.maintenance_until) } : {}),
    })),
    nowMs,
  });
  if (rejection) throw rejectionError(rejection, country);
  const picked = kind === 'sync' ? deps.directory.pick(country) : undefined;
  const adapterAddress = picked?.address ?? '';
  if (kind === 'sync' && !adapterAddress) {
    // The adapter went away between the gate and the pick.
    throw publicError(Code.Unavailable, 'country_service_temporarily_unavailable', {
      message: 'The country service is temporarily unavailable; retry later.',
      retryAfterSeconds: 5,
      country,
    });
  }
  return { adapterAddress, adapterLookupsFree: picked?.provider === 'local' };
}

type Claimed = { admissionId: string; jobId: string | null } | { answer: Admitted };

/**
 * 8: the idempotency claim. A claim is taken before the reservation; any later failure drops it again,
 * so a request refused here or by quota does not consume its Idempotency-Key. Either the admission to
 * reserve for, or the answer when the key is already taken (a replay, a resumed v2 job).
 */
async function claimKey(deps: AdmitDeps, request: Request, adapter: ChosenAdapter): Promise<Claimed> {
  const { keyId, kind } = request;
  const admissionId = randomUUID();
  const jobId = kind === 'job' ? randomUUID() : null;
  const existing = await deps.claims.claim(
    keyId,
    keyNamesOf(deps.idempotencyKeySecret, request.idempotencyKey),
    {
      fingerprint: request.fingerprint,
      kind,
      admissionId,
      jobId,
    },
  );
  if (!existing) return { admissionId, jobId };
  const decision = decideIdempotency(existing, request, Date.now(), deps.timeouts);
  switch (decision.action) {
    case 'reused':
    case 'in_progress':
      throw keyConflict(deps, decision);
    case 'replay':
      return {
        answer: {
          admissionId: existing.admissionId,
          replay: true,
          jobId: existing.jobId ?? '',
          ...adapter,
        },
      };
    case 'reclaim':
      return reclaim(deps, request, existing, admissionId, adapter);
    case 'resume':
      return resume(deps, request, existing, adapter);
  }
}

/** The key's own 409: used for another request, or its original still running. */
function keyConflict(
  deps: AdmitDeps,
  decision: Extract<IdempotencyDecision, { action: 'reused' | 'in_progress' }>,
): ConnectError {
  return deps.refusals.reject(
    decision.action === 'in_progress' ? inProgress(decision.retryAfterSeconds) : keyReused(),
  );
}

/**
 * v1: the owner of the claim died. Its reservation goes back, unless it was committed: then the request
 * was in fact completed (the owner died between the commit and marking the record), and this retry is
 * an exact retry of a completed request.
 */
async function reclaim(
  deps: AdmitDeps,
  request: Request,
  existing: StoredClaim,
  admissionId: string,
  adapter: ChosenAdapter,
): Promise<Claimed> {
  const released = await deps.reservations.release(existing.admissionId);
  if (released.committed) {
    await deps.claims.markClaim(existing.admissionId, 'completed');
    return { answer: { admissionId: existing.admissionId, replay: true, jobId: '', ...adapter } };
  }
  if (!(await deps.claims.takeOver(request.keyId, existing.admissionId, admissionId))) {
    throw deps.refusals.reject(inProgress(1));
  }
  return { admissionId, jobId: null };
}

/**
 * v2: the job may or may not be stored. Same job identity and the same reservation: the job store is
 * idempotent by job id (a reservation already committed by its job reserves again as `ok`). When quota
 * no longer holds the reservation (released: its caller gave up or its reserve failed and the claim
 * could not be dropped after, or its job ended without a result), only the scheduler knows whether the
 * job exists: FenceJob. The job exists -> the claim is
 * accepted and the retry replays it. No job -> its id is fenced now (a SubmitJob of the old admission
 * still on its way is refused) and a new admission with a new job identity takes the claim over and
 * reserves afresh. Never the old job id without a reservation: its job would run and settle nothing.
 * Any other failure keeps the claim: its job may be stored, so the key must not be freed for a second
 * job (issue 14 item 2).
 */
async function resume(
  deps: AdmitDeps,
  request: Request,
  existing: StoredClaim,
  adapter: ChosenAdapter,
): Promise<Claimed> {
  const jobId = existing.jobId ?? '';
  try {
    await deps.reservations.reserve(
      existing.admissionId,
      request.orgId,
      request.country,
      request.inputCount,
      request.kind,
    );
    return { answer: { admissionId: existing.admissionId, replay: false, jobId, ...adapter } };
  } catch (error) {
    // Released, or a release's tombstone (quota answers a tombstone as another reservation's id).
    const code = ConnectError.from(error).code;
    if (code !== Code.FailedPrecondition && code !== Code.AlreadyExists) throw error;
  }
  if (!(await jobGivenUp(deps, existing.admissionId, jobId))) {
    return { answer: { admissionId: existing.admissionId, replay: true, jobId, ...adapter } };
  }
  const admissionId = randomUUID();
  const newJobId = randomUUID();
  if (!(await deps.claims.takeOver(request.keyId, existing.admissionId, admissionId, newJobId))) {
    throw deps.refusals.reject(inProgress(1));
  }
  return { admissionId, jobId: newJobId };
}

/**
 * 9: the quota reservation; a failure drops the claim so the key can be used again. Only quota's
 * refusal (quota exceeded) is known to have reserved nothing. Any other failure may have reserved: a
 * timeout, quota slow, or quota's own outage answer (`platform_failure`), which it gives as well when
 * its connection to PostgreSQL is lost after the reserve committed. The reservation is released first
 * — quota keeps a tombstone, so a reserve landing late is refused — and only then the claim dropped.
 * If the release fails too, the claim stays in progress and the claim reconciler releases and drops
 * it after its timeout (issue 14 item 1): never a reservation for nobody.
 */
async function reserveQuota(
  deps: AdmitDeps,
  request: Request,
  admission: Parameters<typeof undoAdmission>[1],
): Promise<void> {
  const { admissionId } = admission;
  try {
    await deps.reservations.reserve(
      admissionId,
      request.orgId,
      request.country,
      request.inputCount,
      request.kind,
    );
  } catch (error) {
    const reason = readPublicReason(error)?.reason;
    if (reason === QUOTA_EXCEEDED) {
      await deps.claims.dropClaim(admissionId).catch(() => {
        deps.logger.warn('claim drop after a quota refusal did not complete; left to the claim reconciler');
      });
      throw error;
    }
    if (!reason) deps.logger.error({ err: error }, 'quota reservation failed');
    try {
      await undoAdmission(deps, admission);
    } catch {
      deps.logger.warn('release of a failed reservation did not complete; left to the claim reconciler');
    }
    throw reason ? error : deps.refusals.platformFailure();
  }
}
