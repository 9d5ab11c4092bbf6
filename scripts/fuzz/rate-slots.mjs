// S14: requests the spec lets through without counting them against the organization's technical
// rate limit, sent with a valid key: health and readiness, the interface description, unknown paths,
// unsupported methods (405). The organization's remaining count must not move.
import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { send } from '../reliability/http.mjs';
import { int } from '../reliability/report.mjs';

const free = fc.oneof(
  fc.constantFrom(
    ['GET', '/v1/health'],
    ['GET', '/v1/ready'],
    ['GET', '/openapi.json'],
    ['PUT', '/v1/scrub'],
    ['DELETE', '/v2/scrub'],
    ['PATCH', '/v1/health'],
    ['GET', '/v1/scrub'],
    ['GET', '/v2/scrub'],
  ),
  fc
    .tuple(fc.constantFrom('PUT', 'DELETE', 'PATCH'), fc.uuid({ version: 4 }))
    .map(([m, id]) => [m, `/v2/scrub/${id}`]),
  fc
    .tuple(fc.constantFrom('GET', 'DELETE'), fc.uuid({ version: 4 }))
    .map(([m, id]) => [m, `/v2/scrub/${id}/cancel`]),
  fc
    .webPath()
    .filter((p) => !p.startsWith('/v1/') && !p.startsWith('/v2/') && !p.startsWith('/docs'))
    .map((p) => ['GET', p || '/']),
);

async function remaining(baseUrl, key) {
  const res = await send(baseUrl, {
    method: 'GET',
    path: `/v2/scrub/${randomUUID()}`,
    headers: [['authorization', `Bearer ${key}`]],
  });
  if (!res.headers) throw new Error(`the rate-limit probe got no answer: ${res.error}`);
  return {
    remaining: Number(res.headers.get('x-ratelimit-remaining')),
    reset: res.headers.get('x-ratelimit-reset'),
  };
}

export async function checkRateSlots(baseUrl, judge, key, runs, seed) {
  const failures = [];
  let sent = 0;
  let tries = 0;
  for (;;) {
    tries++;
    const before = await remaining(baseUrl, key);
    await fc.assert(
      fc.asyncProperty(free, async ([method, path]) => {
        const req = { method, path, route: path, headers: [['authorization', `Bearer ${key}`]] };
        judge(req, await send(baseUrl, req));
        sent++;
      }),
      { numRuns: runs, seed },
    );
    const after = await remaining(baseUrl, key);
    // A window that turned over in between proves nothing: run again (at most three times).
    if (after.reset !== before.reset && tries < 3) continue;
    if (after.reset === before.reset && after.remaining !== before.remaining - 1)
      failures.push(`${before.remaining - 1 - after.remaining} of ${runs} slot-free requests took a slot`);
    break;
  }
  return {
    scenario: 'S14 rate limit: no slot for health, ready, 404, 405',
    faults: 'generated slot-free requests with a valid key',
    requests: sent,
    jobs: 0,
    pass: failures.length === 0,
    figures:
      failures.length === 0 ? `remaining moved by exactly the 1 probe (${int(sent)} slot-free)` : failures[0],
    failures,
  };
}
