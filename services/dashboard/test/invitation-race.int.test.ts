import { describe, expect, it } from 'vitest';
import { signedIn, sql, withDashboard } from './sign-in-harness.js';

// Found by a review (2026-12-03): an owner's role is checked before their invitation is inserted, and
// invited_by has no foreign key. A removal that committed in between left the new invitation open (the
// removal revokes only the pending invitations it can see), so the removed person held a link back in:
// "an invitation they sent is no way back in" did not hold. The invitation's insert is now conditional on
// the inviter still being an owner, with their row locked FOR SHARE.
withDashboard();

describe('an invitation sent while its owner is being removed', () => {
  it('is never left open: the removal revokes it, or it is not made', async () => {
    const staying = await signedIn();
    const leaving = await signedIn();
    const email = `race-${Date.now()}@example.com`;
    // The invitation's insert takes 800 ms (a slow disk would): the removal runs meanwhile.
    await sql(`CREATE FUNCTION dashboard.slow_invitation() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN PERFORM pg_sleep(0.8); RETURN NEW; END $$`);
    await sql(`CREATE TRIGGER slow_invitation BEFORE INSERT ON dashboard.invitations
      FOR EACH ROW WHEN (NEW.email = '${email}') EXECUTE FUNCTION dashboard.slow_invitation()`);
    try {
      const sent = leaving.c.post('/api/members/invitations', { email, role: 'owner' });
      await new Promise((r) => setTimeout(r, 300));
      const members = (await staying.c.get('/api/members')).body.members as { id: string; email: string }[];
      const id = members.find((m) => m.email === leaving.email)!.id;
      expect((await staying.c.post(`/api/members/${id}/remove`)).status).toBe(204);
      await sent;
    } finally {
      await sql('DROP TRIGGER slow_invitation ON dashboard.invitations');
      await sql('DROP FUNCTION dashboard.slow_invitation()');
    }
    const open = await sql(
      'SELECT 1 FROM dashboard.invitations WHERE email = $1 AND revoked_at IS NULL AND accepted_at IS NULL',
      [email],
    );
    expect(open.rowCount).toBe(0);
  });
});
