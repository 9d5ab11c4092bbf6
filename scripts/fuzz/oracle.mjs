// What every fuzzed response must satisfy: no 5xx, documented by the OpenAPI document (status,
// headers, body), no leak of internals. Problems are counted by kind so one bug is one line.
import { requestIdHeader } from '@dnc/api-contract';
import { RETENTION } from '@dnc/api-contract/limits';
import { createResponseValidator, findLeak } from '@dnc/devstack';

/** The answers Node's HTTP layer makes the gateway write before any route (plugins/lingering-close.ts). */
const PROTOCOL_REFUSALS = new Set(['The request headers exceed 16 KiB.', 'The request is not valid HTTP.']);
/** Spec, Endpoints/Common: the header policy by path, which those answers keep too. */
/** The OpenAPI document's X-Request-Id, which those answers carry too. */
const REQUEST_ID = new RegExp(requestIdHeader['X-Request-Id'].schema.pattern);
const retentionOf = (route) =>
  route.startsWith('/v1/') ? RETENTION.v1 : route.startsWith('/v2/') ? RETENTION.v2 : undefined;

export function createOracle(doc, publicBaseUrl) {
  const validator = createResponseValidator(doc);
  const problems = new Map();
  const refusals = { count: 0 };
  const record = (kind, example) => {
    example = example.length > 300 ? `${example.slice(0, 300)}...` : example;
    const p = problems.get(kind);
    if (p) p.count++;
    else problems.set(kind, { count: 1, example });
  };

  /** Checks one exchange; returns the parsed body (or undefined). `sink` collects this caller's problems. */
  function judge(req, res, sink) {
    const add = (kind, example) => {
      record(kind, example);
      sink?.(kind, example);
    };
    const what = `${req.method} ${req.route}`;
    if (!res.sent) return undefined;
    if (res.status === 0) {
      add(`no answer: ${res.error?.slice(0, 80)}`, what);
      return undefined;
    }
    if (res.status >= 500)
      add(`${res.status} on ${req.method} ${templateOf(req.route)}`, `${what}: ${res.text.slice(0, 200)}`);
    let body;
    if (res.text !== '') {
      try {
        body = JSON.parse(res.text);
      } catch {
        body = res.text;
      }
    }
    const route = req.route.split('?')[0];
    // The interface description names what is never exposed ("provider", "cost"): no leak check there.
    if (route.startsWith('/openapi.json') || route.startsWith('/docs')) return body;
    const leak = findLeak(res.headers.entries(), res.text, publicBaseUrl);
    if (leak) add(`leak on ${req.method} ${templateOf(req.route)}`, leak.slice(0, 300));
    if (res.status === 400 && PROTOCOL_REFUSALS.has(body?.message)) {
      // Node's HTTP parser refused the request before any route saw it (a header block over 16 KiB):
      // 400 on any path, with the service's error body, the path's header policy and an X-Request-Id.
      refusals.count++;
      const retention = retentionOf(route);
      if (retention && res.headers.get('x-retention') !== retention)
        add(`protocol refusal without x-retention: ${retention}`, what);
      if (body.error !== 'validation_error') add('protocol refusal not validation_error', what);
      if (!REQUEST_ID.test(res.headers.get('x-request-id') ?? ''))
        add('protocol refusal without X-Request-Id', what);
      return body;
    }
    for (const problem of validator.check({
      method: req.method === 'HEAD' ? 'GET' : req.method,
      route,
      status: res.status,
      headers: res.headers,
      body: req.method === 'HEAD' ? undefined : body,
    })) {
      add(
        problem.replace(/\/v2\/scrub\/[^/ ]+/g, '/v2/scrub/{job_id}'),
        `${what} ${req.headers.map(([k]) => k).join(',')}`,
      );
    }
    return body;
  }
  return { judge, problems, add: record, refusals };
}

export function templateOf(route) {
  return route
    .split('?')[0]
    .replace(/^\/v2\/scrub\/[^/]+/, (m) => (m === '/v2/scrub' ? m : '/v2/scrub/{job_id}'));
}

/** Quota the fuzzed requests may have consumed: v1 200s that were not replays, v2 jobs that succeeded. */
export class QuotaBook {
  constructor() {
    this.v1 = new Map();
    this.jobs = new Map();
  }
  record(org, req, res, body) {
    if (!body || typeof body !== 'object') return;
    const replay = res.headers.get('idempotency-replayed') === 'true';
    if (req.method === 'POST' && req.route === '/v1/scrub' && res.status === 200 && !replay) {
      const country = JSON.parse(req.body.toString('utf8').replace(/^\uFEFF/, '')).country;
      const k = `${org}:${country}`;
      this.v1.set(k, (this.v1.get(k) ?? 0) + body.summary.total_checked);
    }
    if (req.method === 'POST' && req.route === '/v2/scrub' && res.status === 202 && !replay) {
      this.jobs.set(body.job_id, { org, country: body.country, count: body.submitted_count });
    }
  }
}
