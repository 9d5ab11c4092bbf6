import type { SealingKeys } from '../domain/sealing.js';
import type { InvitationDeps } from '../invitations.js';
import type { SessionDeps } from '../session.js';
import type { AuditLog } from '../store/audit.js';
import type { LockoutPolicy } from '../store/members.js';
import type { Upstreams } from '../upstream.js';

/** What the routes of the backend-for-frontend work with. */
export interface RouteDeps extends SessionDeps, InvitationDeps {
  upstreams: Upstreams;
  audit: AuditLog;
  lockout: LockoutPolicy;
  /** Per-address limit of sign-in attempts (password, second factor, invitation). */
  signInRatePerMinute: number;
  verify: (password: string, stored: string) => Promise<boolean>;
  /** A hash to verify against when the email is unknown (same time as a wrong password). */
  decoyHash: string;
  /** Seal and open the TOTP seeds stored in Postgres. */
  totpKeys: SealingKeys;
}

/** Route config of the routes that take a secret from a person: rate-limited per client address. */
export function signInLimit(deps: RouteDeps) {
  return { rateLimit: { max: deps.signInRatePerMinute, timeWindow: 60_000 } };
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
