import { type ReactNode, useEffect, useRef, useState } from 'react';
import { ApiError } from '../api.js';

/** A page's heading and body; the heading takes focus on navigation so screen readers announce it. */
export function Page({ title, children }: { title: string; children: ReactNode }) {
  const heading = useRef<HTMLHeadingElement>(null);
  useEffect(() => {
    document.title = `${title} · dnc-scrub dashboard`;
    heading.current?.focus();
  }, [title]);
  return (
    <>
      <h1 tabIndex={-1} ref={heading}>
        {title}
      </h1>
      {children}
    </>
  );
}

export function ErrorText({ error }: { error: unknown }) {
  if (!error) return null;
  const message = error instanceof ApiError ? error.message : 'Something went wrong; try again.';
  return (
    <p className="error" role="alert">
      {message}
    </p>
  );
}

/** Load data for a page; `reload` fetches again. */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[] = []) {
  const [data, setData] = useState<T>();
  const [error, setError] = useState<unknown>();
  const [tick, setTick] = useState(0);
  // biome-ignore lint/correctness/useExhaustiveDependencies: the caller names what the load depends on
  useEffect(() => {
    let live = true;
    setError(undefined);
    load().then(
      (d) => live && setData(d),
      (e) => live && setError(e),
    );
    return () => {
      live = false;
    };
  }, [...deps, tick]);
  return { data, error, reload: () => setTick((t) => t + 1) };
}

/** An action of a page: runs `work`, then shows `done` or the error (one message area per page). */
export function useAction() {
  const [message, setMessage] = useState('');
  const [error, setError] = useState<unknown>();
  // How many actions succeeded: what a view that shows their effect reloads on (once per action).
  const [succeeded, setSucceeded] = useState(0);
  async function run(work: () => Promise<unknown>, done = '') {
    setError(undefined);
    setMessage('');
    try {
      await work();
      setMessage(done);
      setSucceeded((n) => n + 1);
    } catch (e) {
      setError(e);
    }
  }
  return { message, error, run, succeeded };
}

export type Run = ReturnType<typeof useAction>['run'];

/** A table that scrolls sideways on narrow screens, reachable by keyboard. */
export function TableWrap({ label, children }: { label: string; children: ReactNode }) {
  return (
    // biome-ignore lint/a11y/noNoninteractiveTabindex: a scrollable region must be reachable by keyboard
    <section className="table-wrap" aria-label={label} tabIndex={0}>
      <table>{children}</table>
    </section>
  );
}

/**
 * A confirmation in a modal <dialog> (focus moves into it and returns; Escape closes it). `onConfirm`
 * runs on the confirm button only.
 */
export function Confirm(props: {
  open: boolean;
  title: string;
  children: ReactNode;
  confirmLabel: string;
  onConfirm: () => void;
  onCancel: () => void;
}) {
  const ref = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    const d = ref.current;
    if (!d) return;
    if (props.open && !d.open) d.showModal();
    if (!props.open && d.open) d.close();
  }, [props.open]);
  return (
    <dialog ref={ref} aria-labelledby="confirm-title" onCancel={props.onCancel}>
      <h2 id="confirm-title">{props.title}</h2>
      {props.children}
      <div className="actions">
        <button type="button" className="danger" onClick={props.onConfirm}>
          {props.confirmLabel}
        </button>
        <button type="button" onClick={props.onCancel}>
          Cancel
        </button>
      </div>
    </dialog>
  );
}

export function Status({ value }: { value: string }) {
  return <span className={`badge badge-${value}`}>{value.replaceAll('_', ' ')}</span>;
}

/** A field of the person's current password, labelled `label`. */
export function CurrentPasswordField({ id, name, label }: { id: string; name: string; label: string }) {
  return (
    <>
      <label htmlFor={id}>{label}</label>
      <input id={id} name={name} type="password" autoComplete="current-password" required maxLength={512} />
    </>
  );
}

/** A field of a 6-digit code from an authenticator app, labelled `label`. */
export function CodeField({ id, name, label }: { id: string; name: string; label: string }) {
  return (
    <>
      <label htmlFor={id}>{label}</label>
      <input
        id={id}
        name={name}
        inputMode="numeric"
        autoComplete="one-time-code"
        pattern="[0-9]{6}"
        required
        maxLength={6}
      />
    </>
  );
}
