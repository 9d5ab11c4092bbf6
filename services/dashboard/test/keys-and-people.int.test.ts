import { randomUUID } from 'node:crypto';
import { dashboardv1 } from '@dnc/proto';
import pg from 'pg';
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

  // Found by a review (2026-12-05). Spec: "Keys are created and revoked in a dashboard; each key is
  // shown once." A key whose secret the response could not carry stayed active, shown to nobody.
  describe('a key whose secret cannot be shown is not left active', () => {
    const keysNamed = async (c: Awaited<ReturnType<typeof signedIn>>['c'], name: string) =>
      ((await c.get('/api/keys')).body.keys as { name: string; revoked_at: string | null }[]).filter(
        (k) => k.name === name,
      );

    it('when its audit entry cannot be written', async () => {
      const { c } = await signedIn();
      const name = `unaudited-${randomUUID().slice(0, 8)}`;
      await sql(`CREATE FUNCTION dashboard.refuse_key_created() RETURNS trigger LANGUAGE plpgsql AS
                 $$ BEGIN IF NEW.action = 'key_created' THEN RAISE EXCEPTION 'audit down'; END IF; RETURN NEW; END $$`);
      await sql(`CREATE TRIGGER refuse_key_created BEFORE INSERT ON dashboard.audit_events
                 FOR EACH ROW EXECUTE FUNCTION dashboard.refuse_key_created()`);
      try {
        const created = await c.post('/api/keys', { name });
        expect(created.status).toBe(500);
        expect(JSON.stringify(created.body)).not.toMatch(/dnc_[0-9a-f]{12}_/);
      } finally {
        await sql('DROP TRIGGER refuse_key_created ON dashboard.audit_events');
        await sql('DROP FUNCTION dashboard.refuse_key_created()');
      }
      const keys = await keysNamed(c, name);
      expect(keys).toHaveLength(1);
      expect(keys[0]!.revoked_at).toEqual(expect.any(String));
    });

    it("when the dashboard's call gave up while admission waited for the organization's lock", async () => {
      const { c } = await signedIn();
      const name = `late-${randomUUID().slice(0, 8)}`;
      const holder = new pg.Client({ connectionString: h.databaseUrl });
      await holder.connect();
      try {
        await holder.query('BEGIN');
        await holder.query('SELECT 1 FROM admission.organizations WHERE org_id = $1 FOR UPDATE', [orgId]);
        // The dashboard's call to admission gives up after 5 s; the lock is held 2 s more.
        const released = new Promise((r) => setTimeout(r, 7_000)).then(() => holder.query('COMMIT'));
        const created = await c.post('/api/keys', { name });
        expect(created.status).toBe(503);
        await released;
      } finally {
        await holder.end();
      }
      await new Promise((r) => setTimeout(r, 1_000));
      expect((await keysNamed(c, name)).filter((k) => k.revoked_at === null)).toEqual([]);
    }, 20_000);

    it("when the dashboard's call gave up while admission's COMMIT was on its way", async () => {
      const { c } = await signedIn();
      const name = `slow-commit-${randomUUID().slice(0, 8)}`;
      // The creation is past every check when its COMMIT starts, and the COMMIT takes 7 s (a deferred
      // trigger): the dashboard gives up after 5 s and revokes while the key is not yet visible.
      await sql(`CREATE FUNCTION admission.slow_commit() RETURNS trigger LANGUAGE plpgsql AS
                 $$ BEGIN IF NEW.name LIKE 'slow-commit-%' THEN PERFORM pg_sleep(7); END IF; RETURN NULL; END $$`);
      await sql(`CREATE CONSTRAINT TRIGGER slow_commit AFTER INSERT ON admission.api_keys
                 DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION admission.slow_commit()`);
      try {
        expect((await c.post('/api/keys', { name })).status).toBe(503);
        await new Promise((r) => setTimeout(r, 3_000));
      } finally {
        await sql('DROP TRIGGER slow_commit ON admission.api_keys');
        await sql('DROP FUNCTION admission.slow_commit()');
      }
      const keys = await keysNamed(c, name);
      expect(keys).toHaveLength(1);
      expect(keys[0]!.revoked_at).toEqual(expect.any(String));
    }, 20_000);
  });
});
