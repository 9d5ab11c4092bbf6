import { randomUUID } from 'node:crypto';
import { dashboardv1 } from '@dnc/proto';
import { describe, expect, it } from 'vitest';
import { DashboardClient, type DashboardResponse } from '../../../test/support/dashboard.js';
import { totpCode } from '../src/domain/totp.js';
import {
  admin,
  base,
  orgId,
  person,
  signedIn,
  sql,
  withDashboard,
  withSecondFactor,
} from './sign-in-harness.js';

// Compliance: no change of the dashboard's own data without its audit row. The row was written after the
// change, outside its transaction: a failed insert (or a crash between the two) left a password changed, a
// member removed, an invitation revoked... with nothing in the audit log. Each such row is now written in
// the transaction of the change it records: both are committed or neither.
withDashboard();

const NEW_PASSWORD = 'a renewed long passphrase';

/** `work` while every insert of an audit row of `action` by `actor` fails, as a database error would. */
async function refusing<T>(action: string, actor: string, work: () => Promise<T>): Promise<T> {
  await sql(`CREATE OR REPLACE FUNCTION dashboard.refuse_audit() RETURNS trigger LANGUAGE plpgsql AS
             $$ BEGIN RAISE EXCEPTION 'audit down'; END $$`);
  await sql(`CREATE TRIGGER refuse_audit BEFORE INSERT ON dashboard.audit_events FOR EACH ROW
             WHEN (NEW.action = '${action}' AND NEW.actor = '${actor}') EXECUTE FUNCTION dashboard.refuse_audit()`);
  try {
    return await work();
  } finally {
    await sql('DROP TRIGGER refuse_audit ON dashboard.audit_events');
  }
}

async function auditRows(action: string, actor: string): Promise<number> {
  const r = await sql(
    'SELECT count(*)::int AS n FROM dashboard.audit_events WHERE action = $1 AND actor = $2',
    [action, actor],
  );
  return r.rows[0].n;
}

async function count(query: string, params: unknown[]): Promise<number> {
  return (await sql(`SELECT count(*)::int AS n FROM ${query}`, params)).rows[0].n;
}

const sessionsOf = (email: string) =>
  count('dashboard.sessions s JOIN dashboard.members m USING (member_id) WHERE m.email = $1', [email]);

/** A second browser signed in as `p`: its session's id as `p` lists it. */
async function otherSession(p: { c: DashboardClient; email: string; password: string }): Promise<string> {
  expect((await new DashboardClient(base).signIn(p.email, p.password)).status).toBe(200);
  const sessions = (await p.c.get('/api/me/sessions')).body.sessions as { id: string; current: boolean }[];
  return sessions.find((s) => !s.current)!.id;
}

/** An owner's invitation of a new address, still open: its id and email. */
async function invitationOf(c: DashboardClient) {
  const email = `i-${randomUUID().slice(0, 8)}@example.com`;
  const r = await c.post('/api/members/invitations', { email, role: 'member' });
  expect(r.status).toBe(201);
  return { id: r.body.invitation.id as string, email };
}

interface Change {
  /** Who the audit row names. */
  actor: string;
  /** The change through the HTTP API, and its answer when it is made. */
  make: () => Promise<DashboardResponse>;
  status: number;
  /** Whether the change is in the database (or, for a password, in force). */
  made: () => Promise<boolean>;
  /** The browser that asked still has its session when the change was not made (credential changes). */
  stillSignedIn?: DashboardClient;
}

/** Each change of the dashboard's own data that is audited, set up afresh for one person. */
const changes: Record<string, () => Promise<Change>> = {
  password_changed: async () => {
    const p = await signedIn();
    return {
      actor: p.email,
      make: () => p.c.post('/api/me/password', { current_password: p.password, new_password: NEW_PASSWORD }),
      status: 200,
      // The old password no longer signs in.
      made: async () => (await new DashboardClient(base).signIn(p.email, p.password)).status === 401,
      stillSignedIn: p.c,
    };
  },
  totp_enabled: async () => {
    const p = await signedIn();
    const secret: string = (await p.c.post('/api/me/totp/setup')).body.secret;
    return {
      actor: p.email,
      make: () => p.c.post('/api/me/totp/enable', { code: totpCode(secret), password: p.password }),
      status: 200,
      made: async () =>
        (await count('dashboard.members WHERE email = $1 AND totp_sealed IS NOT NULL', [p.email])) === 1,
      stillSignedIn: p.c,
    };
  },
  totp_disabled: async () => {
    const p = await withSecondFactor();
    return {
      actor: p.email,
      make: () => p.c.post('/api/me/totp/disable', { password: p.password, code: p.code(1) }),
      status: 200,
      made: async () =>
        (await count('dashboard.members WHERE email = $1 AND totp_sealed IS NULL', [p.email])) === 1,
      stillSignedIn: p.c,
    };
  },
  member_removed: async () => {
    const p = await signedIn();
    const q = await person(dashboardv1.Role.MEMBER);
    const id = (await sql('SELECT member_id FROM dashboard.members WHERE email = $1', [q.email])).rows[0]
      .member_id;
    return {
      actor: p.email,
      make: () => p.c.post(`/api/members/${id}/remove`),
      status: 204,
      made: async () => (await count('dashboard.members WHERE email = $1', [q.email])) === 0,
    };
  },
  invitation_created: async () => {
    const p = await signedIn();
    const email = `i-${randomUUID().slice(0, 8)}@example.com`;
    return {
      actor: p.email,
      make: () => p.c.post('/api/members/invitations', { email, role: 'member' }),
      status: 201,
      made: async () => (await count('dashboard.invitations WHERE email = $1', [email])) === 1,
    };
  },
  invitation_revoked: async () => {
    const p = await signedIn();
    const invitation = await invitationOf(p.c);
    return {
      actor: p.email,
      make: () => p.c.post(`/api/members/invitations/${invitation.id}/revoke`),
      status: 204,
      made: async () =>
        (await count('dashboard.invitations WHERE invitation_id = $1 AND revoked_at IS NOT NULL', [
          invitation.id,
        ])) === 1,
    };
  },
  invitation_accepted: async () => {
    const email = `a-${randomUUID().slice(0, 8)}@example.com`;
    const { link } = await admin.inviteUser({ orgId, email, role: dashboardv1.Role.MEMBER });
    return {
      actor: email,
      make: () => new DashboardClient(base).accept(link, 'correct horse battery'),
      status: 201,
      made: async () =>
        (await count('dashboard.invitations WHERE email = $1 AND accepted_at IS NOT NULL', [email])) === 1 &&
        (await count('dashboard.members WHERE email = $1', [email])) === 1,
    };
  },
  session_ended: async () => {
    const p = await signedIn();
    const id = await otherSession(p);
    return {
      actor: p.email,
      make: () => p.c.post(`/api/me/sessions/${id}/end`),
      status: 204,
      made: async () => (await count('dashboard.sessions WHERE public_id = $1', [id])) === 0,
    };
  },
  sign_out: async () => {
    const p = await signedIn();
    return {
      actor: p.email,
      make: () => p.c.post('/api/session/sign-out'),
      status: 204,
      made: async () => (await sessionsOf(p.email)) === 0,
    };
  },
  sign_out_everywhere: async () => {
    const p = await signedIn();
    await otherSession(p);
    return {
      actor: p.email,
      make: () => p.c.post('/api/session/sign-out-everywhere'),
      status: 204,
      made: async () => (await sessionsOf(p.email)) === 0,
    };
  },
};

describe('an audited change and its audit row are committed together or not at all', () => {
  it.each(Object.entries(changes))(
    '%s: when its audit row cannot be written the change is not made; otherwise it is, with one row',
    async (action, setUp) => {
      const failing = await setUp();
      const refused = await refusing(action, failing.actor, failing.make);
      expect(refused.status).toBe(500);
      expect(await failing.made()).toBe(false);
      expect(await auditRows(action, failing.actor)).toBe(0);
      // Nothing was renewed: the browser goes on with the session it had.
      if (failing.stillSignedIn) expect((await failing.stillSignedIn.get('/api/session')).status).toBe(200);

      const done = await setUp();
      expect((await done.make()).status).toBe(done.status);
      expect(await done.made()).toBe(true);
      expect(await auditRows(action, done.actor)).toBe(1);
    },
  );
});
