import { type FormEvent, useState } from 'react';
import { api, when } from '../api.js';
import { Confirm, ErrorText, Page, type Run, TableWrap, useAction, useLoad } from '../components/ui.js';
import { useIsOwner, useSession } from '../session.js';

interface Member {
  id: string;
  email: string;
  role: string;
  totp_enabled: boolean;
  created_at: string;
  last_sign_in_at: string | null;
}
interface People {
  members: Member[];
  invitations: {
    id: string;
    email: string;
    role: string;
    invited_by: string | null;
    created_at: string;
    expires_at: string;
  }[];
}

export function MembersPage() {
  const owner = useIsOwner();
  const { data, error, reload } = useLoad(() => api.get<People>('/api/members'));
  const action = useAction();
  // Every change reloads the lists.
  const run: Run = (work, done) =>
    action.run(async () => {
      await work();
      reload();
    }, done);
  return (
    <Page title="Members">
      <p>
        Owners manage keys, members and jobs; members can see everything and change nothing. Each person signs
        in with their own email and password.
      </p>
      {owner && <InviteForm run={run} />}
      <ErrorText error={action.error ?? error} />
      {data && <MembersTable members={data.members} run={run} />}
      <h2>Pending invitations</h2>
      {data && data.invitations.length === 0 && <p>None.</p>}
      {data && data.invitations.length > 0 && (
        <TableWrap label="Pending invitations">
          <thead>
            <tr>
              <th scope="col">Email</th>
              <th scope="col">Role</th>
              <th scope="col">Invited by</th>
              <th scope="col">Expires</th>
              {owner && <th scope="col">Action</th>}
            </tr>
          </thead>
          <tbody>
            {data.invitations.map((i) => (
              <tr key={i.id}>
                <td>{i.email}</td>
                <td>{i.role}</td>
                <td>{i.invited_by ?? 'dnc-scrub operator'}</td>
                <td>{when(i.expires_at)}</td>
                {owner && (
                  <td>
                    <button
                      type="button"
                      onClick={() => void run(() => api.post(`/api/members/invitations/${i.id}/revoke`))}
                    >
                      Revoke<span className="sr-only"> invitation of {i.email}</span>
                    </button>
                  </td>
                )}
              </tr>
            ))}
          </tbody>
        </TableWrap>
      )}
    </Page>
  );
}

/** An owner invites by email and role; the one-time link is shown here once, to pass on. */
function InviteForm({ run }: { run: Run }) {
  const [link, setLink] = useState<{ email: string; link: string }>();
  function invite(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = event.currentTarget;
    const f = new FormData(form);
    void run(async () => {
      const r = await api.post<{ invitation: { email: string }; link: string }>('/api/members/invitations', {
        email: f.get('email'),
        role: f.get('role'),
      });
      setLink({ email: r.invitation.email, link: r.link });
      form.reset();
    });
  }
  return (
    <>
      <form className="card inline" onSubmit={invite}>
        <label htmlFor="invite-email">Email</label>
        <input id="invite-email" name="email" type="email" required maxLength={254} />
        <label htmlFor="invite-role">Role</label>
        <select id="invite-role" name="role" defaultValue="member">
          <option value="member">member (read-only)</option>
          <option value="owner">owner</option>
        </select>
        <button type="submit" className="primary">
          Invite
        </button>
      </form>
      {link && (
        <section className="card" aria-labelledby="link-title">
          <h2 id="link-title">Invitation for {link.email}</h2>
          <p role="status">
            Send this one-time link to {link.email} yourself (the platform sends no email). It expires; it is
            not shown again.
          </p>
          <label htmlFor="invite-link">Link</label>
          <input
            id="invite-link"
            className="mono"
            readOnly
            value={link.link}
            onFocus={(e) => e.currentTarget.select()}
          />
          <button type="button" onClick={() => setLink(undefined)}>
            Done
          </button>
        </section>
      )}
    </>
  );
}

function MembersTable({ members, run }: { members: Member[]; run: Run }) {
  const owner = useIsOwner();
  const { me } = useSession();
  const [removing, setRemoving] = useState<Member>();
  return (
    <>
      <TableWrap label="Members">
        <thead>
          <tr>
            <th scope="col">Email</th>
            <th scope="col">Role</th>
            <th scope="col">Second factor</th>
            <th scope="col">Last sign-in</th>
            {owner && <th scope="col">Action</th>}
          </tr>
        </thead>
        <tbody>
          {members.map((m) => (
            <tr key={m.id}>
              <td>{m.email}</td>
              <td>{m.role}</td>
              <td>{m.totp_enabled ? 'on' : 'off'}</td>
              <td>{when(m.last_sign_in_at)}</td>
              {owner && (
                <td>
                  {m.id !== me.member.id && (
                    <button type="button" className="danger" onClick={() => setRemoving(m)}>
                      Remove<span className="sr-only"> {m.email}</span>
                    </button>
                  )}
                </td>
              )}
            </tr>
          ))}
        </tbody>
      </TableWrap>
      <Confirm
        open={!!removing}
        title="Remove this member?"
        confirmLabel="Remove member"
        onConfirm={() => {
          const m = removing;
          setRemoving(undefined);
          if (m) void run(() => api.post(`/api/members/${m.id}/remove`));
        }}
        onCancel={() => setRemoving(undefined)}
      >
        <p>{removing?.email} is signed out everywhere and can no longer sign in.</p>
      </Confirm>
    </>
  );
}
