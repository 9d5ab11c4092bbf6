import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  ageConfirmation,
  LIMIT,
  person,
  signedIn,
  withDashboard,
  withSecondFactor,
} from './sign-in-harness.js';

// Found by a security review of the dashboard (2026-12-05): an owner's session alone could invite an
// address of its holder's as owner, remove the real owners (the last-owner rule then protecting the
// intruder), or mint an API key, which reads every job result. A session taken from an unlocked computer
// could take the organization over for good. These changes now need the owner to have proved who they are
// (the sign-in, or POST /api/session/confirm) within the last CONFIRMATION_MINUTES.
withDashboard();

const invitee = () => `confirm-${randomUUID().slice(0, 8)}@example.com`;

describe('an owner confirms who they are before changes that could hand the organization over', () => {
  it('just signed in: invite, create a key and remove a member go ahead', async () => {
    const { c } = await signedIn();
    expect((await c.post('/api/members/invitations', { email: invitee(), role: 'owner' })).status).toBe(201);
    expect((await c.post('/api/keys', { name: `k-${randomUUID().slice(0, 6)}` })).status).toBe(201);
    const other = await person();
    const listed = (await c.get('/api/members')).body.members as { id: string; email: string }[];
    const target = listed.find((m) => m.email === other.email)!;
    expect((await c.post(`/api/members/${target.id}/remove`)).status).toBe(204);
  });

  it('past the window: each is refused 403 confirmation_required and changes nothing, until confirmed', async () => {
    const owner = await signedIn();
    const other = await person();
    const target = ((await owner.c.get('/api/members')).body.members as { id: string; email: string }[]).find(
      (m) => m.email === other.email,
    )!;
    await ageConfirmation(owner.email);
    const email = invitee();
    const keyName = `k-${randomUUID().slice(0, 6)}`;
    const attempts = [
      () => owner.c.post('/api/members/invitations', { email, role: 'owner' }),
      () => owner.c.post('/api/keys', { name: keyName }),
      () => owner.c.post(`/api/members/${target.id}/remove`),
    ];
    for (const attempt of attempts) {
      const r = await attempt();
      expect([r.status, r.body.error]).toEqual([403, 'confirmation_required']);
    }
    const after = (await owner.c.get('/api/members')).body as {
      members: { email: string }[];
      invitations: { email: string }[];
    };
    expect(after.members.map((m) => m.email)).toContain(other.email);
    expect(after.invitations.map((i) => i.email)).not.toContain(email);
    const keys = (await owner.c.get('/api/keys')).body.keys as { name: string }[];
    expect(keys.map((k) => k.name)).not.toContain(keyName);
    // Reading and other changes are not held back.
    expect((await owner.c.get('/api/audit')).status).toBe(200);

    const wrong = await owner.c.post('/api/session/confirm', { password: 'not the password' });
    expect([wrong.status, wrong.body.error]).toEqual([403, 'invalid_credentials']);
    expect((await owner.c.post('/api/keys', { name: keyName })).status).toBe(403);
    expect((await owner.c.post('/api/session/confirm', { password: owner.password })).status).toBe(204);
    expect([
      (await attempts[0]!()).status,
      (await attempts[1]!()).status,
      (await attempts[2]!()).status,
    ]).toEqual([201, 201, 204]);
    const events = (await owner.c.get('/api/audit')).body.events as { action: string; target: string }[];
    expect(events.some((e) => e.action === 'sign_in_failed' && e.target === 'current password')).toBe(true);
  });

  it('with the second factor on, a confirmation needs a fresh code too; a used code is refused', async () => {
    const p = await withSecondFactor();
    await ageConfirmation(p.email);
    const noCode = await p.c.post('/api/session/confirm', { password: p.password });
    expect([noCode.status, noCode.body.error]).toEqual([400, 'code_required']);
    const used = await p.c.post('/api/session/confirm', { password: p.password, code: p.code(0) });
    expect([used.status, used.body.error]).toEqual([403, 'invalid_code']);
    expect((await p.c.post('/api/keys', { name: 'still refused' })).status).toBe(403);
    const fresh = p.code(1);
    expect((await p.c.post('/api/session/confirm', { password: p.password, code: fresh })).status).toBe(204);
    expect((await p.c.post('/api/keys', { name: `k-${randomUUID().slice(0, 6)}` })).status).toBe(201);
  });

  it('wrong passwords given to confirm count against the lockout: a stolen session cannot try them', async () => {
    const p = await signedIn();
    await ageConfirmation(p.email);
    for (let i = 1; i < LIMIT; i++)
      expect((await p.c.post('/api/session/confirm', { password: `guess ${i}` })).body.error).toBe(
        'invalid_credentials',
      );
    const last = await p.c.post('/api/session/confirm', { password: 'guess last' });
    expect([last.status, last.body.error]).toEqual([429, 'too_many_attempts']);
    const right = await p.c.post('/api/session/confirm', { password: p.password });
    expect([right.status, right.body.error]).toEqual([429, 'too_many_attempts']);
  });
});
