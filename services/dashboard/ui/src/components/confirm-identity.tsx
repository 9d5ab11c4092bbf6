import { type FormEvent, useEffect, useRef, useState } from 'react';
import { api, onConfirmationRequired } from '../api.js';
import { useSession } from '../session.js';
import { CodeField, CurrentPasswordField, ErrorText } from './ui.js';

/**
 * The modal that asks an owner to confirm who they are before a change that could hand the organization
 * to someone else, when the server asks for it (`confirmation_required`): the password, and a code when
 * the second factor is on. The change is sent again once confirmed; cancelling leaves it refused.
 */
export function ConfirmIdentity() {
  const { me } = useSession();
  const ref = useRef<HTMLDialogElement>(null);
  const [answer, setAnswer] = useState<((confirmed: boolean) => void) | null>(null);
  const [error, setError] = useState<unknown>();

  useEffect(() => {
    onConfirmationRequired(
      () =>
        new Promise<boolean>((resolve) => {
          setError(undefined);
          setAnswer(() => resolve);
        }),
    );
    return () => onConfirmationRequired(undefined);
  }, []);

  useEffect(() => {
    const d = ref.current;
    if (!d) return;
    if (answer && !d.open) d.showModal();
    if (!answer && d.open) d.close();
  }, [answer]);

  function close(confirmed: boolean) {
    answer?.(confirmed);
    setAnswer(null);
  }

  async function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = event.currentTarget;
    const f = new FormData(form);
    try {
      await api.post('/api/session/confirm', {
        password: f.get('confirm-password'),
        ...(me.member.totp_enabled ? { code: f.get('confirm-code') } : {}),
      });
      form.reset();
      close(true);
    } catch (e) {
      setError(e);
    }
  }

  return (
    <dialog ref={ref} aria-labelledby="confirm-identity-title" onCancel={() => close(false)}>
      <form onSubmit={(e) => void submit(e)}>
        <h2 id="confirm-identity-title">Confirm it is you</h2>
        <p>This change needs your password{me.member.totp_enabled ? ' and a code from your app' : ''}.</p>
        <input type="email" name="username" autoComplete="username" value={me.member.email} readOnly hidden />
        <CurrentPasswordField id="confirm-password" name="confirm-password" label="Password" />
        {me.member.totp_enabled && (
          <CodeField id="confirm-code" name="confirm-code" label="Code from your authenticator app" />
        )}
        <ErrorText error={error} />
        <div className="actions">
          <button type="submit" className="primary">
            Confirm
          </button>
          <button type="button" onClick={() => close(false)}>
            Cancel
          </button>
        </div>
      </form>
    </dialog>
  );
}
