import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { DashboardClient } from '../../../test/support/dashboard.js';
import { totpCode } from '../src/domain/totp.js';
import { base, goesOn, h, signedIn, sql, withDashboard } from './sign-in-harness.js';

// Found by a review (2026-12-03): a sign-in reads the member, verifies the password (seconds, behind the
// hashing queue) and then creates its session from what it read. Turning the second factor on, changing
// the password or signing out everywhere ends the person's other sessions; a sign-in already judging
// (the attacker's, with a stolen password) created a FULL session after that cleanup and kept it, so
// the factor meant to stop a stolen password did not. A session is now created only while the member's
// sessions epoch is still the one the sign-in read.
withDashboard();

/**
 * Hold the person's sign-in failure row (FOR UPDATE): a correct sign-in stops at its clearing of the
 * failures, after it judged the password and the second factor and before it creates its session, as
 * one that waits behind the hashing queue does. Released by the returned function.
 */
async function holdSignInAfterJudging(email: string): Promise<() => Promise<void>> {
  const db = new pg.Client({ connectionString: h.databaseUrl });
  await db.connect();
  await db.query('BEGIN');
  const held = await db.query('SELECT 1 FROM dashboard.sign_in_failures WHERE email = $1 FOR UPDATE', [
    email,
  ]);
  expect(held.rowCount).toBe(1);
  return async () => {
    await db.query('COMMIT');
    await db.end();
  };
}

/** Until a statement of the dashboard waits on a lock (the held sign-in), at most 10 s. */
async function waitingOnLock(): Promise<void> {
  for (let waited = 0; waited < 10_000; waited += 20) {
    const { rows } = await sql(
      `SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'
       AND query LIKE 'DELETE FROM dashboard.sign_in_failures%'`,
    );
    if (rows.length > 0) return;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error('the sign-in never reached its session');
}

const fullSessions = async (email: string) =>
  (
    await sql(
      `SELECT count(*)::int AS n FROM dashboard.sessions s JOIN dashboard.members m USING (member_id)
       WHERE m.email = $1 AND s.stage = 'full'`,
      [email],
    )
  ).rows[0].n as number;

/**
 * A thief's sign-in with the victim's password, held after it was judged; `meanwhile` runs while it is
 * held, then it goes on. Its answer, and the thief's client.
 */
async function thiefSignsInWhile(
  victim: { email: string; password: string },
  meanwhile: () => Promise<void>,
) {
  const thief = new DashboardClient(base);
  // One wrong guess first, so the email has a failure row that the correct sign-in clears.
  expect((await thief.signIn(victim.email, 'wrong password')).status).toBe(401);
  const release = await holdSignInAfterJudging(victim.email);
  const attempt = thief.signIn(victim.email, victim.password);
  await waitingOnLock();
  await meanwhile();
  await release();
  return { answer: await attempt, thief };
}

describe('a sign-in in flight does not outlive the end of every other session', () => {
  it('the second factor turned on while a stolen password is being judged: no session for the thief', async () => {
    const victim = await signedIn();
    // The victim turns the second factor on meanwhile, which ends every other session.
    const { answer, thief } = await thiefSignsInWhile(victim, async () => {
      const setup = await victim.c.post('/api/me/totp/setup');
      const code = totpCode(setup.body.secret, Date.now());
      goesOn(victim.c, await victim.c.post('/api/me/totp/enable', { code, password: victim.password }));
    });
    expect(answer.status).toBe(401);
    expect(answer.body.error).toBe('invalid_credentials');
    expect((await thief.get('/api/session')).status).toBe(401);
    // The one left is the victim's, renewed by the change (found by a review, 2026-12-05).
    expect(await fullSessions(victim.email)).toBe(1);
    expect((await victim.c.get('/api/session')).status).toBe(200);
    // Signing in again now asks for the code.
    expect((await new DashboardClient(base).signIn(victim.email, victim.password)).body.stage).toBe('mfa');
  });

  it('the password changed while the old one is being judged: no session with the old password', async () => {
    const victim = await signedIn();
    const { answer, thief } = await thiefSignsInWhile(victim, async () => {
      const changed = await victim.c.post('/api/me/password', {
        current_password: victim.password,
        new_password: 'a different long passphrase',
      });
      goesOn(victim.c, changed);
    });
    expect(answer.status).toBe(401);
    expect((await thief.get('/api/session')).status).toBe(401);
    expect(await fullSessions(victim.email)).toBe(1);
  });

  it('a sign-in that is not raced is unchanged', async () => {
    const p = await signedIn();
    const other = new DashboardClient(base);
    expect((await other.signIn(p.email, p.password)).body.stage).toBe('full');
    expect((await other.get('/api/session')).status).toBe(200);
  });
});
