import { randomUUID } from 'node:crypto';
import { copyFileSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createClient } from '@connectrpc/connect';
import { ensureDatabase, grpcTransport, migrateSchema } from '@dnc/kit';
import { dashboardv1 } from '@dnc/proto';
import { Secret } from 'otpauth';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DashboardClient } from '../../../test/support/dashboard.js';
import { hashPassword } from '../src/domain/password.js';
import { newTotpSecret, totpCode } from '../src/domain/totp.js';
import { type RunningDashboard, startDashboard } from '../src/server.js';
import { goesOn, h, config as harnessConfig, sql, untilWaitingOnLock } from './sign-in-harness.js';

// TOTP seeds sealed at rest (AES-256-GCM, key id beside each value), against the real PostgreSQL: the
// first release's plaintext rows are sealed when the dashboard starts; no row holds a seed in any
// form; a wrong or missing key refuses the sign-in with the documented error; rotation re-seals.
const MIGRATIONS = fileURLToPath(new URL('../migrations', import.meta.url));
const key = (fill: number) => Buffer.alloc(32, fill).toString('base64');
const K1 = `t1:${key(1)}`;
const K2 = `t2:${key(2)}`;
const PASSWORD = 'correct horse battery';
const running: RunningDashboard[] = [];
let orgId: string;

/** The suite's configuration with these TOTP keys (the sign-in suites' harness: its `h` is this file's). */
const config = (keys: string, active: string) =>
  harnessConfig({ DNC_TOTP_KEYS: keys, DNC_TOTP_KEY_ACTIVE_ID: active });

/** A dashboard process-equivalent with these keys; its base URL. */
async function dashboard(keys: string, active: string): Promise<string> {
  const d = await startDashboard(config(keys, active));
  running.push(d);
  return `http://127.0.0.1:${d.port}`;
}

/** The whole member row as text, and every form of the seed that must not be in it. */
async function rowHoldsSeed(email: string, seed: string): Promise<boolean> {
  const row = (
    await sql('SELECT row_to_json(m)::text AS t FROM dashboard.members m WHERE email = $1', [email])
  ).rows[0]!.t as string;
  const raw = Buffer.from(Secret.fromBase32(seed).bytes);
  return [seed, raw.toString('hex'), raw.toString('base64')].some((form) =>
    row.toLowerCase().includes(form.toLowerCase()),
  );
}

/**
 * Sign in with password and code; the final response. The member's last used step is forgotten first:
 * these tests sign the same person in more often than once per 30-second step.
 */
async function signIn(base: string, email: string, seed: string, at = Date.now()) {
  await sql('UPDATE dashboard.members SET totp_last_step = NULL WHERE email = $1', [email]);
  const c = new DashboardClient(base);
  const first = await c.signIn(email, PASSWORD);
  expect(first.body.stage).toBe('mfa');
  const second = await c.post('/api/session/totp', { code: totpCode(seed, at) });
  return { c, second };
}

beforeAll(async () => {
  await h.start();
  await h.pki.write('dashboard', 'dashboard');
  orgId = (await h.clients().admin.createOrganization({ name: 'Sealed Org' })).orgId;
}, 120_000);

afterAll(async () => {
  for (const d of running) await d.service.shutdown('test end');
  await h.stop();
});

describe('TOTP seeds at rest', () => {
  let legacy: { email: string; seed: string; pendingEmail: string; pendingSeed: string };

  it("the first release's plaintext seeds are sealed when the dashboard starts; sign-in still works", async () => {
    // The schema as the first release left it, with a plaintext seed (on) and a pending one.
    const first = mkdtempSync(path.join(tmpdir(), 'dash-mig-'));
    const [oldest] = readdirSync(MIGRATIONS).sort();
    copyFileSync(path.join(MIGRATIONS, oldest!), path.join(first, oldest!));
    await ensureDatabase(h.databaseUrl);
    await migrateSchema(h.databaseUrl, 'dashboard', first);
    rmSync(first, { recursive: true });
    legacy = {
      email: `legacy-${randomUUID().slice(0, 8)}@example.com`,
      seed: newTotpSecret(),
      pendingEmail: `pending-${randomUUID().slice(0, 8)}@example.com`,
      pendingSeed: newTotpSecret(),
    };
    const hash = await hashPassword(PASSWORD, 12);
    await sql(
      `INSERT INTO dashboard.members (member_id, org_id, email, role, password_hash, totp_secret)
       VALUES ($1, $2, $3, 'owner', $4, $5)`,
      [randomUUID(), orgId, legacy.email, hash, legacy.seed],
    );
    await sql(
      `INSERT INTO dashboard.members (member_id, org_id, email, role, password_hash, totp_pending_secret)
       VALUES ($1, $2, $3, 'member', $4, $5)`,
      [randomUUID(), orgId, legacy.pendingEmail, hash, legacy.pendingSeed],
    );
    expect(await rowHoldsSeed(legacy.email, legacy.seed)).toBe(true);

    const base = await dashboard(K1, 't1');
    expect(await rowHoldsSeed(legacy.email, legacy.seed)).toBe(false);
    expect(await rowHoldsSeed(legacy.pendingEmail, legacy.pendingSeed)).toBe(false);
    const rows = await sql(
      `SELECT email, totp_secret, totp_pending_secret, totp_key_id, totp_pending_key_id,
              totp_sealed IS NOT NULL AS on, totp_pending_sealed IS NOT NULL AS pending
       FROM dashboard.members WHERE org_id = $1 ORDER BY email`,
      [orgId],
    );
    expect(rows.rows).toEqual([
      expect.objectContaining({ email: legacy.email, totp_secret: '!sealed', totp_key_id: 't1', on: true }),
      expect.objectContaining({
        email: legacy.pendingEmail,
        totp_secret: null,
        totp_pending_secret: null,
        totp_pending_key_id: 't1',
        pending: true,
      }),
    ]);
    // No plaintext seed can be written any more (a replica of the previous release during a rollout).
    await expect(
      sql('UPDATE dashboard.members SET totp_pending_secret = $2 WHERE email = $1', [
        legacy.email,
        'JBSWY3DP',
      ]),
    ).rejects.toThrow(/members_totp_no_plaintext/);

    const { c, second } = await signIn(base, legacy.email, legacy.seed);
    expect(second.body.stage).toBe('full');
    c.csrf = second.body.csrf_token;
    expect((await c.get('/api/session')).body.member.totp_enabled).toBe(true);
  });

  it('set-up and turn-on through the dashboard: the row holds the seed in no form', async () => {
    const base = `http://127.0.0.1:${running[0]!.port}`;
    const admin = createClient(
      dashboardv1.DashboardAdminService,
      grpcTransport(`http://127.0.0.1:${running[0]!.adminPort}`, [], {
        security: await h.pki.security('operator'),
        peer: 'dashboard',
      }),
    );
    const email = `new-${randomUUID().slice(0, 8)}@example.com`;
    const { link } = await admin.inviteUser({ orgId, email, role: dashboardv1.Role.OWNER });
    const c = new DashboardClient(base);
    expect((await c.accept(link, PASSWORD)).status).toBe(201);
    expect((await c.signIn(email, PASSWORD)).body.stage).toBe('full');
    const seed: string = (await c.post('/api/me/totp/setup')).body.secret;
    expect(await rowHoldsSeed(email, seed)).toBe(false);
    const at = Date.now();
    goesOn(c, await c.post('/api/me/totp/enable', { code: totpCode(seed, at), password: PASSWORD }));
    expect(await rowHoldsSeed(email, seed)).toBe(false);
    const row = (
      await sql('SELECT totp_secret, totp_key_id FROM dashboard.members WHERE email = $1', [email])
    ).rows[0];
    expect(row).toEqual({ totp_secret: '!sealed', totp_key_id: 't1' });
    expect((await signIn(base, email, seed, at)).second.body.stage).toBe('full');
  });

  it('a wrong key, a missing key id or a seed moved to another member refuses the sign-in (503, no details)', async () => {
    const wrongKey = await dashboard(`t1:${key(9)}`, 't1');
    const missingId = await dashboard(`t3:${key(3)}`, 't3');
    for (const base of [wrongKey, missingId]) {
      const { c, second } = await signIn(base, legacy.email, legacy.seed, Date.now());
      expect(second.status).toBe(503);
      expect(second.body).toEqual({
        error: 'second_factor_unavailable',
        message:
          'Your second factor cannot be checked right now. Try again later; if it persists, tell your administrator.',
      });
      expect(second.text).not.toMatch(/stack|Error|at .*\.js/);
      expect(second.headers.get('set-cookie')).toBeNull();
      expect((await c.get('/api/session')).status).toBe(401);
    }
    // A sealed seed copied onto another member's row does not open (bound to the member id).
    const victim = `victim-${randomUUID().slice(0, 8)}@example.com`;
    await sql(
      `INSERT INTO dashboard.members (member_id, org_id, email, role, password_hash, totp_sealed, totp_key_id, totp_secret)
       SELECT $1, org_id, $2, 'member', password_hash, totp_sealed, totp_key_id, '!sealed'
       FROM dashboard.members WHERE email = $3`,
      [randomUUID(), victim, legacy.email],
    );
    const base = `http://127.0.0.1:${running[0]!.port}`;
    expect((await signIn(base, victim, legacy.seed, Date.now())).second.body.error).toBe(
      'second_factor_unavailable',
    );
    await sql('DELETE FROM dashboard.members WHERE email = $1', [victim]);
  });

  it('rotation: a new active key re-seals every value when the dashboard starts; the old key can then go', async () => {
    const both = await dashboard(`${K1},${K2}`, 't2');
    const ids = await sql(
      `SELECT DISTINCT coalesce(totp_key_id, totp_pending_key_id) AS id FROM dashboard.members
       WHERE org_id = $1 AND (totp_key_id IS NOT NULL OR totp_pending_key_id IS NOT NULL)`,
      [orgId],
    );
    expect(ids.rows).toEqual([{ id: 't2' }]);
    expect(await rowHoldsSeed(legacy.email, legacy.seed)).toBe(false);
    expect((await signIn(both, legacy.email, legacy.seed, Date.now())).second.body.stage).toBe('full');
    const onlyNew = await dashboard(K2, 't2');
    expect((await signIn(onlyNew, legacy.email, legacy.seed, Date.now())).second.body.stage).toBe('full');
  });

  it('turning on while a new set-up replaces the seed: the second factor stays off and the answer says so', async () => {
    const base = `http://127.0.0.1:${running[0]!.port}`;
    const admin = createClient(
      dashboardv1.DashboardAdminService,
      grpcTransport(`http://127.0.0.1:${running[0]!.adminPort}`, [], {
        security: await h.pki.security('operator'),
        peer: 'dashboard',
      }),
    );
    const email = `race-${randomUUID().slice(0, 8)}@example.com`;
    const { link } = await admin.inviteUser({ orgId, email, role: dashboardv1.Role.OWNER });
    const c = new DashboardClient(base);
    expect((await c.accept(link, PASSWORD)).status).toBe(201);
    expect((await c.signIn(email, PASSWORD)).body.stage).toBe('full');
    const seed: string = (await c.post('/api/me/totp/setup')).body.secret;

    // Hold the member's row: the turn-on reads the pending seed, checks the code, then waits to write.
    const db = new pg.Client({ connectionString: h.databaseUrl });
    await db.connect();
    try {
      await db.query('BEGIN');
      await db.query('SELECT 1 FROM dashboard.members WHERE email = $1 FOR UPDATE', [email]);
      const turningOn = c.post('/api/me/totp/enable', { code: totpCode(seed), password: PASSWORD });
      await untilWaitingOnLock('UPDATE dashboard.members SET totp_sealed');
      // Meanwhile another set-up (another tab) replaced the pending seed.
      await db.query(
        `UPDATE dashboard.members SET totp_pending_sealed = totp_pending_sealed || '\\x00'::bytea WHERE email = $1`,
        [email],
      );
      await db.query('COMMIT');
      const answer = await turningOn;
      expect(answer.status).toBe(409);
      expect(answer.body.error).toBe('totp_not_set_up');
    } finally {
      await db.end();
    }
    expect((await c.get('/api/session')).body.member.totp_enabled).toBe(false);
    const audit = await sql(
      "SELECT count(*)::int AS n FROM dashboard.audit_events WHERE actor = $1 AND action = 'totp_enabled'",
      [email],
    );
    expect(audit.rows[0].n).toBe(0);
  });
});
