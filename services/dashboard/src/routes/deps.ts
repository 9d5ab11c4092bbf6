import type { FastifyInstance, FastifyReply, FastifyRequest, onRequestHookHandler } from 'fastify';
import type { Sealed, SealingKeys } from '../domain/sealing.js';
import { totpStep } from '../domain/totp.js';
import type { InvitationDeps } from '../invitations.js';
import { openSeed } from '../second-factor.js';
import type { SessionDeps } from '../session.js';
import type { AuditLog } from '../store/audit.js';
import type { DevicePolicy, DeviceStore, FailureCount } from '../store/devices.js';
import type { LockoutPolicy } from '../store/members.js';
import { HttpError, type Upstreams } from '../upstream.js';

/** What the routes of the backend-for-frontend work with. */
export interface RouteDeps extends SessionDeps, InvitationDeps {
  upstreams: Upstreams;
  audit: AuditLog;
  lockout: LockoutPolicy;
  /** Browsers that signed in as a member: their failures count apart from the email's. */
  devices: DeviceStore;
  devicePolicy: DevicePolicy;
  /** Per-address limit of sign-in attempts (password, second factor, invitation). */
  signInRatePerMinute: number;
  verify: (password: string, stored: string) => Promise<boolean>;
  /** A hash to verify against when the email is unknown (same time as a wrong password). */
  decoyHash: string;
  /** Seal and open the TOTP seeds stored in Postgres. */
  totpKeys: SealingKeys;
}

const gates = new WeakMap<FastifyInstance, onRequestHookHandler>();

/**
 * The hook of every route that takes a secret from a person (sign-in, second factor, invitation,
 * password checks): one count of attempts per client address across all of them, not one per route
 * (a route's own `config.rateLimit` would count apart).
 */
export function signInGate(app: FastifyInstance, deps: RouteDeps): onRequestHookHandler {
  let gate = gates.get(app);
  if (!gate) {
    gate = app.rateLimit({ max: deps.signInRatePerMinute, timeWindow: 60_000 });
    gates.set(app, gate);
  }
  return gate;
}

/**
 * The answer while an email is locked (too many failed passwords or codes), whatever was sent. It names no
 * time: each lock of a run lasts longer than the one before (store/members.ts), so the lock period was
 * wrong from the second lock on (found by a review, 2026-12-05).
 */
export function lockedError(): HttpError {
  return new HttpError(
    429,
    'too_many_attempts',
    'Too many failed sign-ins for this email: try again later. Each further lock lasts longer, up to a day.',
  );
}

/**
 * The device cookie: a browser's proof that it signed in as a member before. `__Host-` as the session's
 * (Secure, Path=/, no Domain); it outlives sessions and sign-outs.
 */
export const DEVICE_COOKIE = '__Host-dnc_device';

/**
 * Where the failures of a password or code given for `email` count: the browser's own count when it
 * presents a device cookie of that email's member (so a lock of the email, which anyone can cause, does
 * not stop it), else the email's (every other browser, the one that locked it included).
 */
export async function failureCount(
  deps: RouteDeps,
  request: FastifyRequest,
  email: string,
): Promise<FailureCount> {
  const device = await deps.devices.trusted(request.cookies[DEVICE_COOKIE], email);
  if (device)
    return {
      isLocked: () => deps.devices.isLocked(device),
      recordFailure: () => deps.devices.recordFailure(device, deps.lockout),
      clear: () => deps.devices.clearFailures(device),
    };
  return {
    isLocked: () => deps.members.isLocked(email),
    recordFailure: () => deps.members.recordFailure(email, deps.lockout),
    clear: () => deps.members.clearFailures(email),
  };
}

/**
 * The current password, asked before a change: guesses count against the email's lockout as sign-ins
 * do (a stolen session must not be a way to try passwords), and while it is locked nothing is judged.
 * Each wrong one is in the organization's audit log as a failed sign-in is (target "current password",
 * "locked" when it locked the email): guesses made from a stolen session show there.
 * A browser that signed in as the member before counts apart (its device cookie, failureCount).
 */
export async function checkCurrentPassword(
  deps: RouteDeps,
  request: FastifyRequest,
  member: { orgId: string; email: string; passwordHash: string },
  password: string,
): Promise<void> {
  const failures = await failureCount(deps, request, member.email);
  if (await failures.isLocked()) throw lockedError();
  if (!(await deps.verify(password, member.passwordHash))) {
    const nowLocked = await failures.recordFailure();
    await deps.audit.record(
      member.orgId,
      member.email,
      'sign_in_failed',
      nowLocked ? 'current password, locked' : 'current password',
    );
    if (nowLocked) throw lockedError();
    throw new HttpError(403, 'invalid_credentials', 'The current password is wrong.');
  }
  if (await failures.isLocked()) throw lockedError();
}

/**
 * How the steps that ask for a code differ (`checkCurrentCode`): a signed-in session's (a confirmation,
 * turning the factor off) take the defaults; sign-in's second step sets them all.
 */
export interface CodeCheck {
  /** The status of a wrong or used code: 403 by default (a signed-in session's), 401 at sign-in. */
  wrongStatus?: 401 | 403;
  /** The audit target of a wrong code that locked: `${target}, locked` by default. */
  lockedTarget?: string;
  /** Done before the lockout is answered (sign-in ends its half session there). */
  onLocked?: () => Promise<void>;
}

/**
 * A current code of the member's second factor: at sign-in's second step, or asked of a signed-in session
 * with its password (a confirmation, turning the factor off). Its time step is spent, so a code is good
 * once (members.spendTotpStep). A wrong or used one counts where a wrong password does and is in the audit
 * log as a failed sign-in (`target` says what asked for it, "locked" when it locked); while locked nothing
 * is judged, and a right code sent beside wrong ones that locked it is refused too. A seed that cannot be
 * opened refuses it (503) before any code is judged. The count of failures it judged by, for sign-in to
 * clear once it is over.
 */
export async function checkCurrentCode(
  deps: RouteDeps,
  request: FastifyRequest,
  member: { memberId: string; orgId: string; email: string; totp: Sealed | null },
  code: string,
  target: string,
  check: CodeCheck = {},
): Promise<FailureCount> {
  const failures = await failureCount(deps, request, member.email);
  const lockedOut = async () => {
    if (check.onLocked) await check.onLocked();
    return lockedError();
  };
  if (await failures.isLocked()) throw await lockedOut();
  // No seed (the factor turned off meanwhile) is a wrong code: fail closed.
  const seed = member.totp && openSeed(deps.totpKeys, request, member.memberId, member.totp);
  const step = seed ? totpStep(seed, code) : undefined;
  if (step === undefined || !(await deps.members.spendTotpStep(member.memberId, step))) {
    const nowLocked = await failures.recordFailure();
    const audited = nowLocked ? (check.lockedTarget ?? `${target}, locked`) : target;
    await deps.audit.record(member.orgId, member.email, 'sign_in_failed', audited);
    if (nowLocked) throw await lockedOut();
    throw new HttpError(check.wrongStatus ?? 403, 'invalid_code', 'The code is wrong or was used already.');
  }
  // Wrong codes sent at the same time (or of other half sessions) may have locked it meanwhile.
  if (await failures.isLocked()) throw await lockedOut();
  return failures;
}

/** After a complete sign-in: this browser is one of the member's (cookie set or its life renewed). */
export async function rememberDevice(
  deps: RouteDeps,
  request: FastifyRequest,
  reply: FastifyReply,
  memberId: string,
): Promise<void> {
  const token = await deps.devices.remember(memberId, request.cookies[DEVICE_COOKIE]);
  reply.setCookie(DEVICE_COOKIE, token, {
    path: '/',
    secure: true,
    httpOnly: true,
    sameSite: 'strict',
    maxAge: deps.devicePolicy.days * 86_400,
  });
}

/** JSON bodies: exactly these string fields, each bounded. */
export function body(fields: Record<string, number>, required = Object.keys(fields)) {
  return {
    type: 'object',
    additionalProperties: false,
    required,
    properties: Object.fromEntries(
      Object.entries(fields).map(([name, max]) => [name, { type: 'string', maxLength: max }]),
    ),
  } as const;
}

/** A lowercase UUID: every id the backend takes in a path. */
export { UUID_REGEXP as UUID } from '@dnc/api-contract/limits';

/** ISO 8601 of a protobuf timestamp or a date; null when unset. */
export function iso(t: { seconds: bigint; nanos: number } | Date | null | undefined): string | null {
  if (!t) return null;
  if (t instanceof Date) return t.toISOString();
  return new Date(Number(t.seconds) * 1000 + Math.floor(t.nanos / 1e6)).toISOString();
}
