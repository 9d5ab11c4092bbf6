import { type FormEvent, useState } from 'react';
import { api, setCsrfToken } from '../api.js';
import { CodeField, CurrentPasswordField, ErrorText, Page } from '../components/ui.js';

/** Email and password, then (when the person turned it on) a code from their authenticator app. */
export function SignInPage({ onSignedIn }: { onSignedIn: () => Promise<void> }) {
  const [stage, setStage] = useState<'password' | 'code'>('password');
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(false);

  async function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    setBusy(true);
    setError(undefined);
    try {
      const r =
        stage === 'password'
          ? await api.post<{ stage: string; csrf_token: string }>('/api/session', {
              email: form.get('email'),
              password: form.get('password'),
            })
          : await api.post<{ stage: string; csrf_token: string }>('/api/session/totp', {
              code: form.get('code'),
            });
      setCsrfToken(r.csrf_token);
      if (r.stage === 'mfa') setStage('code');
      else await onSignedIn();
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  }

  return (
    <Page title={stage === 'password' ? 'Sign in' : 'Second factor'}>
      <form className="card narrow" onSubmit={submit} aria-describedby="sign-in-help">
        {stage === 'password' ? (
          <>
            <p id="sign-in-help">Sign in to manage your organization's API keys, plan, usage and jobs.</p>
            <label htmlFor="email">Email</label>
            <input id="email" name="email" type="email" autoComplete="username" required maxLength={254} />
            <CurrentPasswordField id="password" name="password" label="Password" />
          </>
        ) : (
          <>
            <p id="sign-in-help">Enter the 6-digit code from your authenticator app.</p>
            <CodeField id="code" name="code" label="Code" />
          </>
        )}
        <ErrorText error={error} />
        <button type="submit" className="primary" disabled={busy}>
          {stage === 'password' ? 'Sign in' : 'Verify'}
        </button>
      </form>
      <p className="hint">
        No account yet? An owner of your organization invites you; the invitation link sets your password.
      </p>
    </Page>
  );
}
