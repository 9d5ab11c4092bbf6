// The dashboard's sign-in suites share this: a dashboard process against the real PostgreSQL and Redis,
// admission in process. Exported bindings are live: set by `withDashboard`'s beforeAll.
import { randomUUID } from 'node:crypto';
import { createClient } from '@connectrpc/connect';
import { grpcTransport, parseConfig } from '@dnc/kit';
import { dashboardv1 } from '@dnc/proto';
import pg from 'pg';
import { afterAll, beforeAll, expect } from 'vitest';
import { DashboardClient, type DashboardResponse } from '../../../test/support/dashboard.js';
import { Harness } from '../../admission/test/harness.js';
import { dashboardConfig } from '../src/config.js';
import { totpCode } from '../src/domain/totp.js';
import { type RunningDashboard, startDashboard } from '../src/server.js';
import { CONFIRMATION_MINUTES } from '../src/store/sessions.js';

// Issue 16, item 2: people and sign-in, against the real PostgreSQL and Redis with admission in process
// (the dashboard asks it whether an organization exists). Passwords are hashed with a lower scrypt cost
// here (2^12) to keep the suite fast; the e2e suite runs the production cost.
export const LIMIT = 4;
export const PUBLIC_URL = 'https://dashboard.example.test';
export const RATE = 12;
export const h = new Harness();
export let dash: RunningDashboard;
export let base: string;
export let admin: ReturnType<typeof createClient<typeof dashboardv1.DashboardAdminService>>;
export let orgId: string;

/** The suite's stack: call once at the top of a test file (each file gets its own). */
export function withDashboard(): void {
  beforeAll(async () => {
    await h.start();
    await h.pki.write('dashboard', 'dashboard');
    dash = await startDashboard(config());
    base = `http://127.0.0.1:${dash.port}`;
    admin = createClient(
      dashboardv1.DashboardAdminService,
      grpcTransport(`http://127.0.0.1:${dash.adminPort}`, [], {
        security: await h.pki.security('operator'),
        peer: 'dashboard',
      }),
    );
    orgId = (await h.clients().admin.createOrganization({ name: 'Sign-in Org' })).orgId;
  });
  afterAll(async () => {
    await dash?.service.shutdown('test end');
    await h.stop();
  });
}

export function config(over: Record<string, string> = {}) {
  return parseConfig(dashboardConfig, {
    DATABASE_URL: h.databaseUrl,
    DNC_ADMISSION_ADDR: `http://127.0.0.1:${h.instances[0]!.port}`,
    DNC_QUOTA_ADDR: `http://127.0.0.1:${h.quota.port}`,
    DNC_JOBS_ADDR: 'http://127.0.0.1:9',
    DNC_REDIS_PREFIX: h.prefix,
    DNC_DASHBOARD_PORT: '0',
    DNC_DASHBOARD_PUBLIC_URL: PUBLIC_URL,
    DNC_GRPC_PORT: '0',
    DNC_METRICS_PORT: '0',
    DNC_LOG_LEVEL: 'silent',
    DNC_SCRYPT_LOG_N: '12',
    DNC_LOCKOUT_FAILURES: String(LIMIT),
    DNC_SIGN_IN_RATE_PER_MINUTE: '10000',
    DNC_TOTP_KEYS: `t1:${Buffer.alloc(32, 3).toString('base64')}`,
    DNC_TOTP_KEY_ACTIVE_ID: 't1',
    ...h.pki.env('dashboard'),
    ...over,
  });
}

/** A member made the operator's way: invitation link, then a password on the invitation page. */
export async function person(role = dashboardv1.Role.OWNER, password = 'correct horse battery') {
  const email = `p-${randomUUID().slice(0, 8)}@example.com`;
  const { link } = await admin.inviteUser({ orgId, email, role });
  const c = new DashboardClient(base);
  expect((await c.accept(link, password)).status).toBe(201);
  return { email, password, c, link };
}

/** A member made by `person`, signed in. */
export async function signedIn(role = dashboardv1.Role.OWNER) {
  const p = await person(role);
  expect((await p.c.signIn(p.email, p.password)).status).toBe(200);
  return p;
}

export async function sql(text: string, params: unknown[] = []) {
  const db = new pg.Client({ connectionString: h.databaseUrl });
  await db.connect();
  try {
    return await db.query(text, params);
  } finally {
    await db.end();
  }
}

/** Until a statement of the dashboard starting with `prefix` waits for a lock (a row the test holds). */
export async function untilWaitingOnLock(prefix: string): Promise<void> {
  await expect
    .poll(async () => {
      const r = await sql(
        "SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE $1",
        [`${prefix}%`],
      );
      return r.rows[0].n;
    })
    .toBe(1);
}

/**
 * A change of the person's credentials (password, second factor on or off) answered: the session was
 * renewed, so the client goes on with the new CSRF token (the new cookie it kept already).
 */
export function goesOn(c: DashboardClient, r: DashboardResponse): void {
  expect(r.status).toBe(200);
  c.csrf = r.body.csrf_token;
}

/** A signed-in person with the second factor on; `code(n)` is the n-th step after it was turned on. */
export async function withSecondFactor() {
  const p = await signedIn();
  const secret: string = (await p.c.post('/api/me/totp/setup')).body.secret;
  const at = Date.now();
  goesOn(p.c, await p.c.post('/api/me/totp/enable', { code: totpCode(secret, at), password: p.password }));
  return { ...p, code: (n: number) => totpCode(secret, at + n * 30_000) };
}

/** Ages the sessions' last proof of identity of `email` past the window, as if signed in long ago. */
export async function ageConfirmation(email: string) {
  await sql(
    `UPDATE dashboard.sessions s SET confirmed_at = now() - make_interval(mins => $2 + 1)
     FROM dashboard.members m WHERE m.member_id = s.member_id AND m.email = $1`,
    [email, CONFIRMATION_MINUTES],
  );
}
