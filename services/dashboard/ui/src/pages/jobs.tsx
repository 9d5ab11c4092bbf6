import { useState } from 'react';
import { Link } from 'wouter';
import { api, COUNTRY_NAMES, count, type Job, when } from '../api.js';
import { Confirm, ErrorText, Page, Status, TableWrap, useLoad } from '../components/ui.js';
import { useIsOwner } from '../session.js';

const STATES = ['queued', 'running', 'succeeded', 'failed', 'cancelled', 'expired'];
const ACTIVE = new Set(['queued', 'running']);

/** The organization's v2 jobs: identity and timing only, never an input or a result. */
export function JobsPage() {
  const [state, setState] = useState('');
  const { data, error } = useLoad(
    () => api.get<{ jobs: Job[] }>(`/api/jobs${state ? `?status=${state}` : ''}`),
    [state],
  );
  return (
    <Page title="Jobs">
      <p>Your v2 jobs (POST /v2/scrub), newest first: the latest 100. Results are fetched through the API.</p>
      <label htmlFor="job-state">State</label>
      <select id="job-state" value={state} onChange={(e) => setState(e.target.value)}>
        <option value="">All states</option>
        {STATES.map((s) => (
          <option key={s} value={s}>
            {s}
          </option>
        ))}
      </select>
      <ErrorText error={error} />
      {data && (
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
            {data.jobs.length === 0 && (
              <tr>
                <td colSpan={8}>No jobs{state ? ` in state ${state}` : ''}.</td>
              </tr>
            )}
            {data.jobs.map((j) => (
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
      )}
    </Page>
  );
}

export function JobPage({ id }: { id: string }) {
  const owner = useIsOwner();
  const { data, error, reload } = useLoad(() => api.get<{ job: Job }>(`/api/jobs/${id}`), [id]);
  const [confirming, setConfirming] = useState(false);
  const [cancelError, setCancelError] = useState<unknown>();
  const job = data?.job;

  async function cancel() {
    setConfirming(false);
    try {
      await api.post(`/api/jobs/${id}/cancel`);
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
