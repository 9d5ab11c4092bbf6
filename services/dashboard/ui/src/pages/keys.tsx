import { type FormEvent, useRef, useState } from 'react';
import { api, type Key, when } from '../api.js';
import { Confirm, ErrorText, Page, Status, TableWrap, useLoad } from '../components/ui.js';
import { useIsOwner } from '../session.js';

/**
 * API keys: list, create (the secret is shown here once, held in this component's state only, and gone
 * when the panel is closed or the page left), revoke with a confirmation.
 */
export function KeysPage() {
  const owner = useIsOwner();
  const { data, error, reload } = useLoad(() => api.get<{ keys: Key[] }>('/api/keys'));
  const [created, setCreated] = useState<{ key: Key; secret: string }>();
  const [actionError, setActionError] = useState<unknown>();
  // One creation at a time: a double click sent two, made two keys and showed one secret (a review,
  // 2026-12-05). The ref holds before React has rendered the button disabled.
  const creating = useRef(false);
  const [busy, setBusy] = useState(false);

  async function create(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    if (creating.current) return;
    creating.current = true;
    setBusy(true);
    const form = event.currentTarget;
    setActionError(undefined);
    try {
      const name = new FormData(form).get('name');
      setCreated(await api.post<{ key: Key; secret: string }>('/api/keys', { name }));
      form.reset();
      reload();
    } catch (e) {
      setActionError(e);
    } finally {
      creating.current = false;
      setBusy(false);
    }
  }

  async function revoke(key: Key) {
    try {
      await api.post(`/api/keys/${key.id}/revoke`);
      reload();
    } catch (e) {
      setActionError(e);
    }
  }

  return (
    <Page title="API keys">
      <p>
        Keys authenticate your servers to the API (<code>Authorization: Bearer …</code>). Keep them on your
        servers only; never in a browser or an app.
      </p>
      {created && <NewSecret created={created} onDone={() => setCreated(undefined)} />}
      {owner && !created && (
        <form className="card inline" onSubmit={create}>
          <label htmlFor="key-name">Name of the new key</label>
          <input id="key-name" name="name" required maxLength={100} placeholder="production server" />
          <button type="submit" className="primary" disabled={busy}>
            Create key
          </button>
        </form>
      )}
      <ErrorText error={actionError ?? error} />
      {data && <KeysTable keys={data.keys} onRevoke={revoke} />}
      <section aria-labelledby="rotation">
        <h2 id="rotation">Rotating a key without downtime</h2>
        <ol>
          <li>Create a new key here.</li>
          <li>Deploy it to every server that calls the API, and check that requests succeed with it.</li>
          <li>Revoke the old key. Revocation takes effect at once: the old key gets 401 within seconds.</li>
        </ol>
      </section>
    </Page>
  );
}

/** The keys with their state; an owner revokes one after a confirmation. */
function KeysTable({ keys, onRevoke }: { keys: Key[]; onRevoke: (key: Key) => Promise<void> }) {
  const owner = useIsOwner();
  const [revoking, setRevoking] = useState<Key>();
  async function revoke() {
    const key = revoking;
    setRevoking(undefined);
    if (key) await onRevoke(key);
  }
  return (
    <>
      <TableWrap label="API keys">
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">Prefix</th>
            <th scope="col">Created</th>
            <th scope="col">Last used</th>
            <th scope="col">Status</th>
            {owner && <th scope="col">Action</th>}
          </tr>
        </thead>
        <tbody>
          {keys.length === 0 && (
            <tr>
              <td colSpan={owner ? 6 : 5}>No keys yet.</td>
            </tr>
          )}
          {keys.map((k) => (
            <tr key={k.id}>
              <td>{k.name || '(unnamed)'}</td>
              <td>
                <code>{k.prefix}…</code>
              </td>
              <td>{when(k.created_at)}</td>
              <td>{k.last_used_at ? when(k.last_used_at) : 'never'}</td>
              <td>{k.revoked_at ? <Status value="revoked" /> : <Status value="active" />}</td>
              {owner && (
                <td>
                  {!k.revoked_at && (
                    <button type="button" className="danger" onClick={() => setRevoking(k)}>
                      Revoke<span className="sr-only"> {k.name}</span>
                    </button>
                  )}
                </td>
              )}
            </tr>
          ))}
        </tbody>
      </TableWrap>
      <Confirm
        open={!!revoking}
        title="Revoke this key?"
        confirmLabel="Revoke key"
        onConfirm={() => void revoke()}
        onCancel={() => setRevoking(undefined)}
      >
        <p>
          <strong>{revoking?.name}</strong> (<code>{revoking?.prefix}…</code>) stops working at once: every
          request with it gets 401. This cannot be undone.
        </p>
      </Confirm>
    </>
  );
}

function NewSecret({ created, onDone }: { created: { key: Key; secret: string }; onDone: () => void }) {
  const [copied, setCopied] = useState(false);
  async function copy() {
    await navigator.clipboard.writeText(created.secret);
    setCopied(true);
  }
  return (
    <section className="card secret" aria-labelledby="secret-title">
      <h2 id="secret-title">Your new key “{created.key.name}”</h2>
      <p className="warning" role="alert">
        Copy it now: this is the only time it is shown. It is not stored anywhere we can show it again; if you
        lose it, create a new key and revoke this one.
      </p>
      <label htmlFor="secret-value">Secret</label>
      <input
        id="secret-value"
        className="mono"
        readOnly
        value={created.secret}
        onFocus={(e) => e.currentTarget.select()}
      />
      <div className="actions">
        <button type="button" className="primary" onClick={() => void copy()}>
          Copy key
        </button>
        <button type="button" onClick={onDone}>
          I have stored it safely
        </button>
        <span aria-live="polite">{copied ? 'Copied to the clipboard.' : ''}</span>
      </div>
    </section>
  );
}
