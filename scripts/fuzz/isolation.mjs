// S15: every job route, asked with another organization's job id, answers exactly what it answers
// for an id that does not exist (and for one that is not an id): same status, same bytes, same
// headers apart from the date and the caller's own rate-limit figures.
import { randomUUID } from 'node:crypto';
import { send } from '../reliability/http.mjs';

const VARYING = new Set([
  'date',
  'x-ratelimit-remaining',
  'x-ratelimit-reset',
  'ratelimit-remaining',
  'ratelimit-reset',
]);

function shape(res) {
  const headers = [...res.headers.entries()]
    .filter(([k]) => !VARYING.has(k))
    .map(([k, v]) => `${k}: ${v}`)
    .sort()
    .join('\n');
  return `${res.status}\n${headers}\n\n${res.text}`;
}

const ROUTES = [
  ['GET', (id) => `/v2/scrub/${id}`],
  ['GET', (id) => `/v2/scrub/${id}/result`],
  ['POST', (id) => `/v2/scrub/${id}/cancel`],
];

/** `foreignJobs`: jobs of the owner in every state reached; `stranger`: another organization's key. */
export async function checkIsolation(baseUrl, judge, { foreignJobs, strangerKey, rounds }) {
  const failures = [];
  let requests = 0;
  const ask = async (method, path, key) => {
    requests++;
    const req = {
      method,
      path,
      route: path,
      // One X-Request-Id for every probe: the gateway echoes a client's well-formed id, so that header too
      // must be the same for a foreign, a missing and a malformed id (a fresh id each would differ anyway).
      headers: [
        ['authorization', `Bearer ${key}`],
        ['x-request-id', 's15-probe'],
        ...(method === 'POST' ? [['content-length', '0']] : []),
      ],
    };
    const res = await send(baseUrl, req);
    judge(req, res);
    return res;
  };
  for (let round = 0; round < rounds; round++) {
    for (const jobId of foreignJobs) {
      for (const [method, path] of ROUTES) {
        const foreign = await ask(method, path(jobId), strangerKey);
        const missing = await ask(method, path(randomUUID()), strangerKey);
        const malformed = await ask(method, path(`${jobId.slice(0, 8)}-not-an-id`), strangerKey);
        if (foreign.status !== 404)
          failures.push(`${method} ${path('{id}')}: another organization's job answered ${foreign.status}`);
        if (shape(foreign) !== shape(missing))
          failures.push(`${method} ${path('{id}')}: another organization's job differs from a missing one`);
        if (shape(malformed) !== shape(missing))
          failures.push(`${method} ${path('{id}')}: a malformed id differs from a missing one`);
      }
    }
  }
  return { requests, failures: [...new Set(failures)] };
}
