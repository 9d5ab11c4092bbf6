import { randomUUID } from 'node:crypto';
import { dashboardv1 } from '@dnc/proto';
import { describe, expect, it } from 'vitest';
import { admin, orgId, signedIn, withDashboard } from './sign-in-harness.js';

// The audit log says once when a key was revoked, and the Members page says who sent each pending
// invitation (docs/dashboard.md, "Audit log" and "Invitations").
withDashboard();

describe('keys and people', () => {
  it('revoking a revoked key answers the same and adds no second audit entry', async () => {
    const { c } = await signedIn();
    const name = `twice-${randomUUID().slice(0, 8)}`;
    const created = await c.post('/api/keys', { name });
    expect(created.status).toBe(201);
    const id: string = created.body.key.id;
    const first = await c.post(`/api/keys/${id}/revoke`);
    const again = await c.post(`/api/keys/${id}/revoke`);
    expect([first.status, again.status]).toEqual([200, 200]);
    expect(first.body.key.revoked_at).toEqual(expect.any(String));
    expect(again.body.key).toEqual(first.body.key);
    const events = (await c.get('/api/audit')).body.events as { action: string; target: string }[];
    const revocations = events.filter((e) => e.action === 'key_revoked' && e.target.startsWith(name));
    expect(revocations).toHaveLength(1);
    expect(events.filter((e) => e.action === 'key_created' && e.target.startsWith(name))).toHaveLength(1);
  });

  it('pending invitations name who sent them: a member by email, the operator as null', async () => {
    const { c, email: owner } = await signedIn();
    const byOwner = `by-owner-${randomUUID().slice(0, 8)}@example.com`;
    expect((await c.post('/api/members/invitations', { email: byOwner, role: 'member' })).status).toBe(201);
    const byOperator = `by-operator-${randomUUID().slice(0, 8)}@example.com`;
    await admin.inviteUser({ orgId, email: byOperator, role: dashboardv1.Role.MEMBER });
    const listed = (await c.get('/api/members')).body.invitations as {
      email: string;
      invited_by: string | null;
    }[];
    expect(listed.find((i) => i.email === byOwner)?.invited_by).toBe(owner);
    const fromOperator = listed.find((i) => i.email === byOperator);
    expect(fromOperator).toBeDefined();
    expect(fromOperator!.invited_by).toBeNull();
  });
});
