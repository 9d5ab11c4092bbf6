import { type FormEvent, useState } from 'react';
import { api, changeCredentials, when } from '../api.js';
import {
  CodeField,
  CurrentPasswordField,
  ErrorText,
  Page,
  type Run,
  TableWrap,
  useAction,
  useLoad,
} from '../components/ui.js';
import { useSession } from '../session.js';

/** The signed-in person's own password, second factor and sessions. */
export function AccountPage() {
  const { me } = useSession();
  const { message, error, run, succeeded } = useAction();
  return (
    <Page title="Your account">
      <p>
        Signed in as <strong>{me.member.email}</strong> ({me.member.role}).
      </p>
      <p aria-live="polite">{message}</p>
      <ErrorText error={error} />
      <PasswordCard run={run} />
      <SecondFactorCard run={run} />
      <SessionsCard run={run} changed={succeeded} />
    </Page>
  );
}

function PasswordCard({ run }: { run: Run }) {
  const { me } = useSession();
  function changePassword(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = event.currentTarget;
    const f = new FormData(form);
    void run(async () => {
      await changeCredentials('/api/me/password', {
        current_password: f.get('current'),
        new_password: f.get('new'),
      });
      form.reset();
    }, 'Password changed. Your other sessions were signed out.');
  }
  return (
    <form className="card narrow" onSubmit={changePassword}>
      <h2>Change password</h2>
      <input type="email" name="username" autoComplete="username" value={me.member.email} readOnly hidden />
      <CurrentPasswordField id="current" name="current" label="Current password" />
      <label htmlFor="new">New password (at least 12 characters)</label>
      <input
        id="new"
        name="new"
        type="password"
        autoComplete="new-password"
        minLength={12}
        maxLength={128}
        required
      />
      <button type="submit" className="primary">
        Change password
      </button>
    </form>
  );
}

function SecondFactorCard({ run }: { run: Run }) {
  const { me, refresh } = useSession();
  const [setup, setSetup] = useState<TotpSetup>();
  function enable(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const f = new FormData(event.currentTarget);
    void run(async () => {
      await changeCredentials('/api/me/totp/enable', { code: f.get('code'), password: f.get('password') });
      setSetup(undefined);
      await refresh();
    }, 'Second factor on: sign-in now asks for a code. Your other sessions were signed out.');
  }
  function disable(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const f = new FormData(event.currentTarget);
    void run(async () => {
      await changeCredentials('/api/me/totp/disable', { password: f.get('password'), code: f.get('code') });
      await refresh();
    }, 'Second factor off. Your other sessions were signed out.');
  }
  return (
    <section className="card narrow" aria-labelledby="totp">
      <h2 id="totp">Second factor (authenticator app)</h2>
      {me.member.totp_enabled ? (
        <form onSubmit={disable}>
          <p>On. Sign-in asks for a 6-digit code.</p>
          <CurrentPasswordField id="totp-password" name="password" label="Password, to turn it off" />
          <CodeField id="totp-off-code" name="code" label="Current code of your app, to turn it off" />
          <button type="submit">Turn off</button>
        </form>
      ) : setup ? (
        <form onSubmit={enable}>
          <p>
            Scan this QR code with your authenticator app, or add the setup key by hand (time-based, 6 digits,
            30 seconds); then enter the code it shows.
          </p>
          <QrCode qr={setup.qr} />
          <label htmlFor="totp-secret">Setup key</label>
          <input id="totp-secret" className="mono" readOnly value={setup.secret} />
          <label htmlFor="totp-uri">Or this otpauth link</label>
          <input id="totp-uri" className="mono" readOnly value={setup.uri} />
          <CodeField id="totp-code" name="code" label="Code" />
          <CurrentPasswordField id="totp-on-password" name="password" label="Password, to turn it on" />
          <button type="submit" className="primary">
            Turn on
          </button>
        </form>
      ) : (
        <>
          <p>Off. With it on, a stolen password alone cannot sign in.</p>
          <button
            type="button"
            onClick={() => void run(async () => setSetup(await api.post('/api/me/totp/setup')))}
          >
            Set up
          </button>
        </>
      )}
    </section>
  );
}

interface TotpSetup {
  secret: string;
  uri: string;
  /** The otpauth URI as a QR code: one SVG path drawn by the backend (no image, no inline style). */
  qr: { size: number; path: string };
}

/** The set-up QR code: drawn from the path the backend built, held in component state only. */
function QrCode({ qr }: { qr: TotpSetup['qr'] }) {
  return (
    <svg
      className="qr"
      role="img"
      aria-labelledby="totp-qr-title"
      viewBox={`0 0 ${qr.size} ${qr.size}`}
      width="200"
      height="200"
      shapeRendering="crispEdges"
    >
      <title id="totp-qr-title">QR code of the setup key, for your authenticator app</title>
      <rect width={qr.size} height={qr.size} fill="#ffffff" />
      <path d={qr.path} fill="#000000" />
    </svg>
  );
}

interface SessionRow {
  id: string;
  complete: boolean;
  user_agent: string;
  signed_in_at: string;
  last_seen_at: string;
  current: boolean;
}

/** "Chrome on Android" from a User-Agent header; the header itself is shown on hover. */
function browserName(userAgent: string): string {
  const browser = [
    ['Edg/', 'Edge'],
    ['Firefox/', 'Firefox'],
    ['Chrome/', 'Chrome'],
    ['Safari/', 'Safari'],
    ['curl/', 'curl'],
  ].find(([mark]) => userAgent.includes(mark!))?.[1];
  const system = [
    ['Android', 'Android'],
    ['iPhone', 'iOS'],
    ['iPad', 'iPadOS'],
    ['Windows', 'Windows'],
    ['Mac OS X', 'macOS'],
    ['Linux', 'Linux'],
  ].find(([mark]) => userAgent.includes(mark!))?.[1];
  if (!browser && !system) return userAgent ? 'Unknown browser' : 'Not recorded';
  return [browser ?? 'A browser', system && `on ${system}`].filter(Boolean).join(' ');
}

/**
 * The person's live sessions, with an End button for each other one (one not recognised ends without
 * signing out everywhere), then Sign out everywhere. Reloaded after every action of the page: a password
 * change or turning the second factor on or off ends the other sessions (this one goes on renewed).
 */
function SessionsCard({ run, changed }: { run: Run; changed: number }) {
  const { signOut } = useSession();
  const { data, error } = useLoad(() => api.get<{ sessions: SessionRow[] }>('/api/me/sessions'), [changed]);
  return (
    <section className="card" aria-labelledby="sessions">
      <h2 id="sessions">Sessions</h2>
      <ErrorText error={error} />
      {data && (
        <TableWrap label="Your sessions">
          <thead>
            <tr>
              <th scope="col">Browser</th>
              <th scope="col">Signed in</th>
              <th scope="col">Last active</th>
              <th scope="col">Action</th>
            </tr>
          </thead>
          <tbody>
            {data.sessions.map((s) => (
              <tr key={s.id}>
                <td title={s.user_agent}>
                  {browserName(s.user_agent)}
                  {!s.complete && ' (second factor not given)'}
                </td>
                <td>{when(s.signed_in_at)}</td>
                <td>{when(s.last_seen_at)}</td>
                <td>
                  {s.current ? (
                    'This session'
                  ) : (
                    <button
                      type="button"
                      onClick={() =>
                        void run(() => api.post(`/api/me/sessions/${s.id}/end`), 'Session ended.')
                      }
                    >
                      End<span className="sr-only"> the session signed in {when(s.signed_in_at)}</span>
                    </button>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </TableWrap>
      )}
      <p>Sign out everywhere ends every session above, this one included.</p>
      <button
        type="button"
        className="danger"
        onClick={() =>
          void run(async () => {
            await api.post('/api/session/sign-out-everywhere');
            await signOut();
          })
        }
      >
        Sign out everywhere
      </button>
    </section>
  );
}
