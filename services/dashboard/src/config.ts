import { commonConfig, port, serviceAddress, z } from '@dnc/kit';
import { failuresInFirstDay } from './store/members.js';

const int = (min: number, max: number, fallback: number) =>
  z.coerce.number().int().min(min).max(max).default(fallback);

const dashboardFields = z.object({
  ...commonConfig,
  /** The browser-facing HTTP port (the backend-for-frontend and the built front end). */
  DNC_DASHBOARD_PORT: port(8090),
  DNC_DASHBOARD_HOST: z.string().default('0.0.0.0'),
  /**
   * A request's headers and its body (at most 16 KiB) arrive within this, or its socket is closed; a
   * socket silent both ways for 30 s is closed too. Without them a body sent a byte at a time, or an
   * answer never read, held its socket for good (fastify's default is no bound).
   */
  DNC_DASHBOARD_REQUEST_TIMEOUT_MS: z.coerce.number().int().min(500).max(120_000).default(10_000),
  /**
   * The address people open, `https://dashboard.example.com` (no path): invitation links are made from
   * it, and a state change whose Origin is another one is refused.
   */
  DNC_DASHBOARD_PUBLIC_URL: z
    .string()
    .default('http://127.0.0.1:8090')
    .refine((v) => /^https?:\/\/[^/\s]+$/.test(v), 'must be http(s)://host[:port] without a path'),
  /**
   * Internal gRPC port: grpc.health.v1 and service info (mutual TLS). DashboardAdminService (operator
   * invitations) is on the admin listener, DNC_ADMIN_PORT.
   */
  DNC_GRPC_PORT: port(50054),
  DNC_ADMISSION_ADDR: serviceAddress('http://127.0.0.1:50051'),
  DNC_QUOTA_ADDR: serviceAddress('http://127.0.0.1:50052'),
  DNC_JOBS_ADDR: serviceAddress('http://127.0.0.1:50053'),
  /** Prefix of the sign-in rate limit's Redis keys, so parallel stacks never share counters. */
  DNC_REDIS_PREFIX: z
    .string()
    .regex(/^[A-Za-z0-9_:.-]*$/, 'letters, digits and _ : . - only')
    .default(''),
  /** Proxy hops whose X-Forwarded-For is believed (the ingress controller: 1). */
  DNC_TRUST_PROXY_HOPS: int(0, 10, 0),
  /** How long an invitation link works. */
  DNC_INVITATION_TTL_HOURS: int(1, 720, 72),
  /** A session ends after this long without a request, and in any case after the absolute bound. */
  DNC_SESSION_IDLE_MINUTES: int(1, 1440, 30),
  DNC_SESSION_ABSOLUTE_HOURS: int(1, 168, 12),
  /** Sign-in attempts (password, second factor, invitation) per client address per minute. */
  DNC_SIGN_IN_RATE_PER_MINUTE: int(1, 10_000, 20),
  /** Consecutive failed sign-ins of one email that lock it, and for how long. */
  DNC_LOCKOUT_FAILURES: int(1, 100, 5),
  DNC_LOCKOUT_MINUTES: int(1, 1440, 15),
  /**
   * A browser that signed in as a member is remembered this many days after its last complete sign-in
   * (device cookie): its failures count apart, under a lock of its own, so a lock of the email does not
   * keep it out. A member keeps at most DNC_DEVICES_PER_MEMBER, the most recently used.
   */
  DNC_DEVICE_DAYS: int(1, 365, 30),
  DNC_DEVICES_PER_MEMBER: int(1, 100, 20),
  /** How often expired sessions and devices and forgotten sign-in failures (the emails typed) are deleted. */
  DNC_PURGE_INTERVAL_MS: int(100, 3_600_000, 600_000),
  /**
   * scrypt cost exponent (N = 2^n). 17 is OWASP's current recommendation for scrypt (N=2^17, r=8, p=1,
   * 128 MiB); tests may lower it, never production (the chart does not expose it).
   */
  DNC_SCRYPT_LOG_N: int(10, 20, 17),
  /**
   * Keys that seal the TOTP seeds at rest (AES-256-GCM): `id1:base64,id2:base64`, 32 bytes each, and
   * the id of the one that seals new values. Rotation: add a key, make it active, restart (the
   * dashboard re-seals every value under it when it starts), then drop the old one.
   */
  DNC_TOTP_KEYS: z.string().min(1),
  DNC_TOTP_KEY_ACTIVE_ID: z.string().regex(/^[A-Za-z0-9_.-]{1,64}$/, 'letters, digits, _ . - only'),
  /** Where the built front end is; the default is the package's own dist/ui. */
  DNC_DASHBOARD_ASSETS: z.string().optional(),
});

/**
 * The lockout's settings allow at most 100 failures of an email in a run's first day (NIST SP 800-63B
 * 5.2.2; store/members.ts `failuresInFirstDay`): 35 at the defaults. A review (2026-12-05) found that
 * DNC_LOCKOUT_FAILURES alone (up to 100) allowed about 700.
 */
export const dashboardConfig = dashboardFields.superRefine((c, ctx) => {
  const failures = failuresInFirstDay({ limit: c.DNC_LOCKOUT_FAILURES, lockMinutes: c.DNC_LOCKOUT_MINUTES });
  if (failures > 100)
    ctx.addIssue({
      code: 'custom',
      path: ['DNC_LOCKOUT_FAILURES'],
      message: `with DNC_LOCKOUT_MINUTES=${c.DNC_LOCKOUT_MINUTES} this allows ${failures} failed sign-ins of an email in a day; at most 100 (NIST SP 800-63B 5.2.2)`,
    });
});

export type DashboardConfig = z.infer<typeof dashboardConfig>;
