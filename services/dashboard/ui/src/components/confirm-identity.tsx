import { type FormEvent, useEffect, useRef, useState } from 'react';
import { useLocation } from 'wouter';
import { ApiError, api, onConfirmationRequired } from '../api.js';
import { useSession } from '../session.js';
import { CodeField, CurrentPasswordField, ErrorText } from './ui.js';

/** How a pending change learns whether the person confirmed. */
type Answer = ((confirmed: boolean) => void) | null;

/**
 * The modal that asks an owner to confirm who they are before a change that could hand the organization
 * to someone else, when the server asks for it (`confirmation_required`): the password, and a code when
 * the second factor is on. The change is sent again once confirmed; cancelling leaves it refused.
 */
export function ConfirmIdentity() {
  const { me, refresh } = useSession();
  const [location] = useLocation();
  const ref = useRef<HTMLDialogElement>(null);
  const form = useRef<HTMLFormElement>(null);
  const [answer, setAnswer] = useState<Answer>(null);
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(false);

  useEffect(() => {
    onConfirmationRequired(
      () =>
        new Promise<boolean>((resolve) => {
          setError(undefined);
          // A second change asking while the dialog is open: the first is answered "not confirmed"
          // (refused as it was), never left waiting for good.
          setAnswer((earlier: Answer) => {
            earlier?.(false);
            return resolve;
          });
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

  // Left for another page (Back): the change it was asked for is given up, not sent once the page is gone
  // (a key created there would never show its secret).
  // biome-ignore lint/correctness/useExhaustiveDependencies: only a change of location closes it
  useEffect(() => close(false), [location]);

  /**
   * Closed either way, nothing typed is kept: a password typed and then cancelled must not fill the next
   * confirmation for whoever sits at the computer next (a review, 2026-12-05).
   */
  function close(confirmed: boolean) {
    form.current?.reset();
    setAnswer((pending: Answer) => {
      pending?.(confirmed);
      return null;
    });
  }

  async function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    if (busy) return;
    const f = new FormData(event.currentTarget);
    setBusy(true);
    try {
      await api.post('/api/session/confirm', {
        password: f.get('confirm-password'),
        ...(me.member.totp_enabled ? { code: f.get('confirm-code') } : {}),
      });
      close(true);
    } catch (e) {
      setError(e);
      // The second factor was turned on (or off) in another tab: the page learns it and asks accordingly.
      if (e instanceof ApiError && e.code === 'code_required') await refresh();
    } finally {
      setBusy(false);
    }
  }

  return (
    <dialog ref={ref} aria-labelledby="confirm-identity-title" onClose={() => close(false)}>
      <form ref={form} onSubmit={(e) => void submit(e)}>
        <h2 id="confirm-identity-title">Confirm it is you</h2>
        <p>This change needs your password{me.member.totp_enabled ? ' and a code from your app' : ''}.</p>
        <input type="email" name="username" autoComplete="username" value={me.member.email} readOnly hidden />
        <CurrentPasswordField id="confirm-password" name="confirm-password" label="Password" />
        {me.member.totp_enabled && (
          <CodeField id="confirm-code" name="confirm-code" label="Code from your authenticator app" />
        )}
        <ErrorText error={error} />
        <div className="actions">
          <button type="submit" className="primary" disabled={busy}>
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
