import { type FormEvent, useEffect, useState } from 'react';
import { Link } from 'wouter';
import { ApiError, api } from '../api.js';
import { ErrorText, Page } from '../components/ui.js';

interface Invitation {
  email: string;
  role: string;
  organization: string | null;
  expires_at: string;
}

/**
 * The invitation link: `/invitation#token=...`. The token is in the fragment (never sent in a request
 * line or a Referer); it is read once, removed from the address bar and history, and sent in POST bodies.
 */
function takeToken(): string {
  const match = /(?:^#|&)token=([A-Za-z0-9_-]+)/.exec(window.location.hash);
  if (match) window.history.replaceState(null, '', window.location.pathname);
  return match?.[1] ?? '';
}

export function InvitationPage() {
  const [token] = useState(takeToken);
  const [invitation, setInvitation] = useState<Invitation>();
  const [error, setError] = useState<unknown>();
  const [done, setDone] = useState(false);
  const [busy, setBusy] = useState(false);

  useEffect(() => {
    if (!token) {
      setError(
        new ApiError(
          404,
          'invitation_invalid',
          'This invitation link is not complete: open it again from the message you received.',
        ),
      );
      return;
    }
    api.post<Invitation>('/api/invitations/inspect', { token }).then(setInvitation, setError);
  }, [token]);

  async function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    if (form.get('password') !== form.get('confirm')) {
      setError(new ApiError(400, 'mismatch', 'The two passwords differ.'));
      return;
    }
    setBusy(true);
    setError(undefined);
    try {
      await api.post('/api/invitations/accept', { token, password: form.get('password') });
      setDone(true);
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  }

  if (done)
    return (
      <Page title="Password set">
        <div className="card narrow">
          <p>Your account is ready. Sign in with {invitation?.email} and your new password.</p>
          <Link href="/sign-in" className="button primary">
            Go to sign-in
          </Link>
        </div>
      </Page>
    );

  return (
    <Page title="Join your organization">
      {!invitation ? (
        <ErrorText error={error} />
      ) : (
        <SetPasswordForm invitation={invitation} busy={busy} error={error} onSubmit={submit} />
      )}
    </Page>
  );
}

/** Who the invitation is for, and the new password twice. */
function SetPasswordForm(props: {
  invitation: Invitation;
  busy: boolean;
  error: unknown;
  onSubmit: (event: FormEvent<HTMLFormElement>) => void;
}) {
  const { invitation, busy, error } = props;
  return (
    <form className="card narrow" onSubmit={props.onSubmit}>
      <p>
        You are invited to <strong>{invitation.organization ?? 'an organization'}</strong> as{' '}
        <strong>{invitation.role}</strong> with the email <strong>{invitation.email}</strong>. Choose a
        password of at least 12 characters.
      </p>
      <input type="email" name="username" autoComplete="username" value={invitation.email} readOnly hidden />
      <label htmlFor="password">New password</label>
      <input
        id="password"
        name="password"
        type="password"
        autoComplete="new-password"
        minLength={12}
        maxLength={128}
        required
      />
      <label htmlFor="confirm">Repeat the password</label>
      <input
        id="confirm"
        name="confirm"
        type="password"
        autoComplete="new-password"
        minLength={12}
        maxLength={128}
        required
      />
      <ErrorText error={error} />
      <button type="submit" className="primary" disabled={busy}>
        Set password
      </button>
    </form>
  );
}
