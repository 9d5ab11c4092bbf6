import { randomUUID } from 'node:crypto';
import { dashboardv1 } from '@dnc/proto';
import { describe, expect, it } from 'vitest';
import { admin, h, orgId, signedIn, sql, withDashboard } from './sign-in-harness.js';

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

  it("audit events are known by random ids, so a customer cannot count other organizations' events", async () => {
    const { c } = await signedIn();
    const other = (await h.clients().admin.createOrganization({ name: 'Audit Neighbour' })).orgId;
    // The page's own events, then another organization's in between, then more of its own: 205 in all.
    const rows = (org: string, n: number, tag: string) =>
      sql(
        `INSERT INTO dashboard.audit_events (org_id, actor, action, target)
         SELECT $1, 'operator', 'key_created', $2 || g FROM generate_series(1, $3) g`,
        [org, tag, n],
      );
    const ours = (await c.get('/api/audit')).body.events.length as number;
    await rows(orgId, 100, 'first-');
    await rows(other, 37, 'theirs-');
    await rows(orgId, 205 - 100, 'second-');
    const page = (await c.get('/api/audit')).body as {
      events: { id: string; target: string }[];
      next_before: string;
    };
    expect(page.events).toHaveLength(200);
    for (const e of page.events)
      expect(e.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(page.next_before).toBe(page.events.at(-1)!.id);
    const rest = (await c.get(`/api/audit?before=${page.next_before}`)).body;
    expect(rest.events.length).toBe(205 + ours - 200);
    expect(rest.events.some((e: { target: string }) => e.target.startsWith('theirs-'))).toBe(false);
    expect(new Set([...page.events, ...rest.events].map((e) => e.id)).size).toBe(205 + ours);
    // Another organization's event as the cursor: nothing; a cursor that is not an id: 400.
    const theirs = await sql('SELECT public_id FROM dashboard.audit_events WHERE org_id = $1 LIMIT 1', [
      other,
    ]);
    expect((await c.get(`/api/audit?before=${theirs.rows[0].public_id}`)).body.events).toEqual([]);
    const bad = await c.get('/api/audit?before=12345');
    expect([bad.status, bad.body.error]).toEqual([400, 'validation_error']);
  });
});
