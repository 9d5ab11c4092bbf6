import { useState } from 'react';
import { Link } from 'wouter';
import { api, COUNTRY_NAMES, count, type Job, when } from '../api.js';
import { Confirm, ErrorText, Page, Status, TableWrap, useLoad } from '../components/ui.js';
import { useIsOwner } from '../session.js';

const STATES = ['queued', 'running', 'succeeded', 'failed', 'cancelled', 'expired'];
const ACTIVE = new Set(['queued', 'running']);

const PAGE_SIZES = [10, 25, 50, 100];

/**
 * The organization's v2 jobs, newest first, a page at a time: identity and timing only, never an input
 * or a result. The state filter and the page size hold across pages; changing either starts again at
 * the newest. Pages are keyset cursors from the backend: `pages` holds the cursor of each page read so
 * far, so "Newer" goes back exactly.
 */
export function JobsPage() {
  const [state, setState] = useState('');
  const [size, setSize] = useState(25);
  const [pages, setPages] = useState<string[]>(['']);
  const cursor = pages[pages.length - 1]!;
  const { data, error } = useLoad(() => {
    const q = new URLSearchParams({ limit: String(size) });
    if (state) q.set('status', state);
    if (cursor) q.set('cursor', cursor);
    return api.get<{ jobs: Job[]; next_cursor: string | null }>(`/api/jobs?${q}`);
  }, [state, size, cursor]);
  return (
    <Page title="Jobs">
      <p>Your v2 jobs (POST /v2/scrub), newest first. Results are fetched through the API.</p>
      <div className="filters">
        <div>
          <label htmlFor="job-state">State</label>
          <select
            id="job-state"
            value={state}
            onChange={(e) => {
              setState(e.target.value);
              setPages(['']);
            }}
          >
            <option value="">All states</option>
            {STATES.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </div>
        <div>
          <label htmlFor="job-page-size">Jobs per page</label>
          <select
            id="job-page-size"
            value={size}
            onChange={(e) => {
              setSize(Number(e.target.value));
              setPages(['']);
            }}
          >
            {PAGE_SIZES.map((n) => (
              <option key={n} value={n}>
                {n}
              </option>
            ))}
          </select>
        </div>
      </div>
      <ErrorText error={error} />
      {data && <JobsTable jobs={data.jobs} state={state} />}
      {data && (
        <nav className="pager" aria-label="Pages of jobs">
          <button type="button" disabled={pages.length === 1} onClick={() => setPages(pages.slice(0, -1))}>
            Newer jobs
          </button>
          <span aria-live="polite">Page {pages.length}</span>
          <button
            type="button"
            disabled={!data.next_cursor}
            onClick={() => data.next_cursor && setPages([...pages, data.next_cursor])}
          >
            Older jobs
          </button>
        </nav>
      )}
    </Page>
  );
}

function JobsTable({ jobs, state }: { jobs: Job[]; state: string }) {
  return (
    <TableWrap label="Jobs">
      <thead>
        <tr>
          <th scope="col">Job</th>
          <th scope="col">Country</th>
          <th scope="col">State</th>
          <th scope="col">Submitted</th>
          <th scope="col">Created</th>
          <th scope="col">Started</th>
          <th scope="col">Finished</th>
          <th scope="col">Expires</th>
        </tr>
      </thead>
      <tbody>
        {jobs.length === 0 && (
          <tr>
            <td colSpan={8}>No jobs{state ? ` in state ${state}` : ''}.</td>
          </tr>
        )}
        {jobs.map((j) => (
          <tr key={j.id}>
            <td>
              <Link href={`/jobs/${j.id}`}>
                <code>{j.id.slice(0, 8)}</code>
                <span className="sr-only"> job {j.id}</span>
              </Link>
            </td>
            <td>{j.country}</td>
            <td>
              <Status value={j.status} />
            </td>
            <td>{count(j.submitted_count)}</td>
            <td>{when(j.created_at)}</td>
            <td>{when(j.started_at)}</td>
            <td>{when(j.finished_at)}</td>
            <td>{when(j.expires_at)}</td>
          </tr>
        ))}
      </tbody>
    </TableWrap>
  );
}

export function JobPage({ id }: { id: string }) {
  const owner = useIsOwner();
  const { data, error, reload } = useLoad(() => api.get<{ job: Job }>(`/api/jobs/${id}`), [id]);
  const [confirming, setConfirming] = useState(false);
  const [cancelError, setCancelError] = useState<unknown>();
  const [notCancelled, setNotCancelled] = useState<string>();
  const job = data?.job;

  async function cancel() {
    setConfirming(false);
    setNotCancelled(undefined);
    try {
      const res = await api.post<{ job: Job; cancelled: boolean }>(`/api/jobs/${id}/cancel`);
      // A job that ended while the dialog was open is not cancelled: said, not left to a reload to show.
      if (!res.cancelled)
        setNotCancelled(
          res.job.cancel_requested
            ? 'Its cancel had already been requested: nothing more to do.'
            : `The job had already ended (${res.job.status}): nothing was cancelled.`,
        );
      reload();
    } catch (e) {
      setCancelError(e);
    }
  }

  return (
    <Page title="Job">
      <p>
        <Link href="/jobs">All jobs</Link>
      </p>
      <ErrorText error={cancelError ?? error} />
      {notCancelled && <p role="status">{notCancelled}</p>}
      {job && (
        <>
          <dl className="facts">
            <dt>Job id</dt>
            <dd>
              <code>{job.id}</code>
            </dd>
            <dt>Country</dt>
            <dd>
              {COUNTRY_NAMES[job.country] ?? job.country} ({job.country})
            </dd>
            <dt>State</dt>
            <dd>
              <Status value={job.status} />
              {job.cancel_requested && ' (cancel requested: finishing an external call)'}
              {job.error && (
                <>
                  {' '}
                  <code>{job.error}</code>
                </>
              )}
            </dd>
            <dt>Submitted numbers</dt>
            <dd>{count(job.submitted_count)}</dd>
            <dt>Created</dt>
            <dd>{when(job.created_at)}</dd>
            <dt>Started</dt>
            <dd>{when(job.started_at)}</dd>
            <dt>Finished</dt>
            <dd>{when(job.finished_at)}</dd>
            <dt>Expires</dt>
            <dd>{when(job.expires_at)}</dd>
          </dl>
          {owner && ACTIVE.has(job.status) && !job.cancel_requested && (
            <button type="button" className="danger" onClick={() => setConfirming(true)}>
              Cancel job
            </button>
          )}
        </>
      )}
      <Confirm
        open={confirming}
        title="Cancel this job?"
        confirmLabel="Cancel job"
        onConfirm={() => void cancel()}
        onCancel={() => setConfirming(false)}
      >
        <p>The job stops and gives no result; its reserved quota is released. This cannot be undone.</p>
      </Confirm>
    </Page>
  );
}
