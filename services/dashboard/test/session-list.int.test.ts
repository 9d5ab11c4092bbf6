import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { DashboardClient } from '../../../test/support/dashboard.js';
import { base, person, signedIn, sql, withDashboard } from './sign-in-harness.js';

// The Account page lists a person's own live sessions (the browser that opened each, when, when last used)
// and ends one it does not recognise without signing out everywhere (docs/dashboard.md, "Sign-in and
// sessions").
withDashboard();

const PHONE_UA = 'Mozilla/5.0 (Linux; Android 14) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0 Mobile';

/** A second browser of the person `p`, signed in with `userAgent`. */
async function browser(p: { email: string; password: string }, userAgent: string) {
  const c = new DashboardClient(base);
  const r = await c.post(
    '/api/session',
    { email: p.email, password: p.password },
    { headers: { 'user-agent': userAgent } },
  );
  expect(r.status).toBe(200);
  c.csrf = r.body.csrf_token;
  return c;
}

describe('a person lists and ends their own sessions', () => {
  it('lists every live session of the person, this one marked, by random ids; ends another one only', async () => {
    const p = await signedIn();
    const phone = await browser(p, `${PHONE_UA}\t\u00e9${'x'.repeat(300)}`);
    const listing = await p.c.get('/api/me/sessions');
    expect(listing.status).toBe(200);
    expect(listing.headers.get('cache-control')).toBe('no-store');
    const sessions = listing.body.sessions as Record<string, unknown>[];
    expect(sessions).toHaveLength(2);
    const mine = sessions.find((s) => s.current)!;
    const other = sessions.find((s) => !s.current)!;
    expect(Object.keys(mine).sort()).toEqual(
      ['complete', 'current', 'expires_at', 'id', 'last_seen_at', 'signed_in_at', 'user_agent'].sort(),
    );
    expect(mine.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    // What is kept of a browser's User-Agent: printable ASCII, at most 200 characters.
    expect(other.user_agent).toBe(`${PHONE_UA}${'x'.repeat(200 - PHONE_UA.length)}`);
    expect(other).toMatchObject({ complete: true, current: false });
    // The list says nothing that opens a session: no cookie token, no token hash, no CSRF token.
    const token = p.c.cookies.get('__Host-dnc_session')!;
    const hashes = (await sql('SELECT encode(token_hash, $1) AS h FROM dashboard.sessions', ['hex'])).rows;
    for (const secret of [token, p.c.csrf, phone.csrf, ...hashes.map((r) => r.h as string)])
      expect(listing.text).not.toContain(secret);

    // The phone's session ends; this one stays. Its id is spent.
    expect((await p.c.post(`/api/me/sessions/${other.id}/end`)).status).toBe(204);
    expect((await phone.get('/api/session')).status).toBe(401);
    expect((await p.c.get('/api/session')).status).toBe(200);
    expect((await p.c.get('/api/me/sessions')).body.sessions).toHaveLength(1);
    expect((await p.c.post(`/api/me/sessions/${other.id}/end`)).body.error).toBe('session_not_found');
    const audit = await p.c.get('/api/audit');
    expect(audit.body.events[0]).toMatchObject({ action: 'session_ended', actor: p.email });
  });

  it("one's own session is ended by signing out; another person's, an unknown or a malformed id is 404", async () => {
    const p = await signedIn();
    const q = await signedIn();
    const mine = (await p.c.get('/api/me/sessions')).body.sessions[0];
    const theirs = (await q.c.get('/api/me/sessions')).body.sessions[0];
    const current = await p.c.post(`/api/me/sessions/${mine.id}/end`);
    expect(current).toMatchObject({ status: 409, body: { error: 'current_session' } });
    for (const id of [theirs.id, randomUUID(), 'not-a-session', mine.id.toUpperCase()]) {
      expect((await p.c.post(`/api/me/sessions/${encodeURIComponent(id)}/end`)).status).toBe(404);
    }
    expect((await q.c.get('/api/session')).status).toBe(200);
    expect((await p.c.get('/api/session')).status).toBe(200);
  });

  it('a half-open session (password given, second factor awaited) is listed as not complete and can be ended', async () => {
    const p = await person();
    const c = new DashboardClient(base);
    expect((await c.signIn(p.email, p.password)).status).toBe(200);
    await sql(
      `UPDATE dashboard.sessions s SET stage = 'mfa' FROM dashboard.members m
       WHERE m.member_id = s.member_id AND m.email = $1`,
      [p.email],
    );
    // The person signs in again elsewhere and sees the half-open session someone opened with the password.
    expect((await p.c.signIn(p.email, p.password)).status).toBe(200);
    const sessions = (await p.c.get('/api/me/sessions')).body.sessions as { id: string; complete: boolean }[];
    const half = sessions.find((s) => !s.complete)!;
    expect(half).toBeDefined();
    expect((await p.c.post(`/api/me/sessions/${half.id}/end`)).status).toBe(204);
    expect((await p.c.get('/api/me/sessions')).body.sessions).toHaveLength(1);
  });

  it('listing needs a session; ending needs the CSRF token', async () => {
    const p = await signedIn();
    const phone = await browser(p, PHONE_UA);
    expect((await new DashboardClient(base).get('/api/me/sessions')).status).toBe(401);
    const other = (
      (await p.c.get('/api/me/sessions')).body.sessions as { id: string; current: boolean }[]
    ).find((s) => !s.current)!;
    expect((await p.c.post(`/api/me/sessions/${other.id}/end`, {}, { csrf: null })).status).toBe(403);
    expect((await p.c.post(`/api/me/sessions/${other.id}/end`, {}, { csrf: phone.csrf })).status).toBe(403);
    expect((await phone.get('/api/session')).status).toBe(200);
  });
});
