// S2 (rate limit exact across the gateways), S3 (idempotency race), S16 (key rotation under load).
import { randomUUID } from 'node:crypto';
import { api } from '../../reliability/http.mjs';
import { admin, quotaOf, seedOrg, sleep } from '../../reliability/stack.mjs';
import { ms } from '../probe.mjs';
import { phonesOf } from '../traffic.mjs';
import { COUNTRY, scenarioOrg } from '../world.mjs';

const each = (world, i) => world.stack.addresses.gateways[i % world.stack.addresses.gateways.length];

/** S2: `limit` slots per window; 2 x limit requests spread over the 3 gateways within one window. */
export async function s2RateLimit(world, _ledger, { rounds, limit = 30 }) {
  const org = await seedOrg(world.stack, { name: 'Chaos S2', countries: [COUNTRY], rateLimit: limit });
  const failures = [];
  const admitted = [];
  let requests = 0;
  for (let round = 0; round < rounds; round++) {
    const probe = await api(each(world, 0), 'GET', `/v2/scrub/${randomUUID()}`, { key: org.apiKey });
    requests++;
    const reset = Number(probe.headers?.get('x-ratelimit-reset'));
    // Start just after the window turns, so the whole burst falls in one window.
    await sleep(Math.max(0, reset * 1000 - Date.now()) + 300);
    const started = Date.now();
    const burst = await Promise.all(
      Array.from({ length: limit * 2 }, (_, i) =>
        api(each(world, i), 'GET', `/v2/scrub/${randomUUID()}`, { key: org.apiKey }),
      ),
    );
    requests += burst.length;
    const through = burst.filter((r) => r.status === 404).length;
    const limited = burst.filter((r) => r.status === 429 && r.body?.error === 'rate_limit_exceeded').length;
    const window = Number(burst[0].headers?.get('x-ratelimit-reset')) * 1000 - started;
    if (
      burst.some(
        (r) =>
          Number(r.headers?.get('x-ratelimit-reset')) !== Number(burst[0].headers?.get('x-ratelimit-reset')),
      )
    )
      failures.push(`round ${round}: the burst straddled two windows (${window} ms left); not judged`);
    else if (through !== limit)
      failures.push(`round ${round}: ${through} requests let through, limit ${limit}`);
    if (through + limited !== burst.length)
      failures.push(`round ${round}: ${burst.length - through - limited} other answers`);
    admitted.push(through);
  }
  return {
    scenario: 'S2 rate limit exact across 3 gateways',
    faults: '-',
    requests,
    jobs: 0,
    pass: failures.every((f) => f.endsWith('not judged')) && admitted.length > 0 && failures.length < rounds,
    figures: `limit ${limit}: let through ${admitted.join(', ')} of ${limit * 2} per window`,
    failures,
  };
}

/** S3: 50 identical requests at once (one key), v1 and v2 alternating: one execution, one charge. */
export async function s3IdempotencyRace(world, ledger, { rounds, width = 50 }) {
  const org = await scenarioOrg(world, 'Chaos S3');
  const failures = [];
  let requests = 0;
  let charged = 0;
  let jobs = 0;
  for (let round = 0; round < rounds; round++) {
    const v2 = round % 2 === 1;
    const idem = randomUUID();
    const { phones } = phonesOf(3);
    const answers = await Promise.all(
      Array.from({ length: width }, () =>
        api(world.publicBaseUrl, 'POST', v2 ? '/v2/scrub' : '/v1/scrub', {
          key: org.apiKey,
          idem,
          json: { country: COUNTRY, phones },
        }),
      ),
    );
    requests += width;
    const odd = answers.filter(
      (r) =>
        ![200, 202, 409].includes(r.status) ||
        (r.status === 409 && r.body?.error !== 'idempotency_request_in_progress'),
    );
    if (odd.length)
      failures.push(
        `round ${round}: ${odd.map((r) => `${r.status} ${r.body?.error ?? r.error ?? ''}`).join(', ')}`,
      );
    if (v2) {
      const ids = new Set(
        answers.filter((r) => r.status === 202 || r.status === 200).map((r) => r.body.job_id),
      );
      if (ids.size !== 1) failures.push(`round ${round}: ${ids.size} job ids for one key`);
      const first = answers.find((r) => r.status === 202);
      if (first) {
        ledger.accept(org, first.body, idem);
        jobs++;
      }
    } else {
      const executed = answers.filter(
        (r) => r.status === 200 && r.headers.get('idempotency-replayed') !== 'true',
      ).length;
      if (executed !== 1) failures.push(`round ${round}: ${executed} executions for one key`);
      if (executed >= 1) {
        ledger.charge(org.orgId, phones.length);
        charged += phones.length;
      }
    }
  }
  const q = await quotaOf(world.stack, org.orgId, COUNTRY);
  const reservedForJobs = [...ledger.jobs.values()]
    .filter((j) => j.org === org)
    .reduce((s, j) => s + j.count, 0);
  if (q.used > charged + reservedForJobs || q.used + q.reserved < charged)
    failures.push(
      `quota used ${q.used} + reserved ${q.reserved}; v1 executions account for ${charged}, jobs for at most ${reservedForJobs}`,
    );
  return {
    scenario: `S3 ${width}-way idempotency race x ${rounds}`,
    faults: '-',
    requests,
    jobs,
    pass: failures.length === 0,
    figures: `${Math.ceil(rounds / 2)} v1 keys: 1 execution each; ${jobs} v2 keys: 1 job each`,
    failures,
  };
}

/** S16: a new key, traffic moved to it, the old key revoked under load. */
export async function s16KeyRotation(world, _ledger, { seconds }) {
  const org = await scenarioOrg(world, 'Chaos S16');
  let key = org.apiKey;
  let running = true;
  let revokeStarted = false;
  const wrong = [];
  let requests = 0;
  const lanes = Array.from({ length: 6 }, async () => {
    while (running) {
      const used = key;
      const res = await api(world.publicBaseUrl, 'GET', `/v2/scrub/${randomUUID()}`, { key: used });
      requests++;
      if (res.status !== 404 && !(used === org.apiKey && revokeStarted))
        wrong.push(`valid key answered ${res.status} ${res.body?.error ?? res.error ?? ''}`);
      await sleep(10);
    }
  });
  await sleep((seconds * 1000) / 3);
  const k2 = await admin(world.stack, 'key create', { org: org.orgId });
  key = k2.api_key;
  await sleep((seconds * 1000) / 3);
  revokeStarted = true;
  const t0 = Date.now();
  await admin(world.stack, 'key revoke', { 'key-id': org.keyId });
  // Each gateway, asked with the revoked key until it refuses it; then never again accepted.
  const refusedAfter = await Promise.all(
    world.stack.addresses.gateways.map(async (gw) => {
      for (;;) {
        const r = await api(gw, 'GET', `/v2/scrub/${randomUUID()}`, { key: org.apiKey });
        requests++;
        if (r.status === 401) return Date.now() - t0;
        if (Date.now() - t0 > 10_000) return Number.POSITIVE_INFINITY;
        await sleep(20);
      }
    }),
  );
  const after = await Promise.all(
    world.stack.addresses.gateways.map((gw) =>
      api(gw, 'GET', `/v2/scrub/${randomUUID()}`, { key: org.apiKey }),
    ),
  );
  requests += after.length;
  await sleep((seconds * 1000) / 3);
  running = false;
  await Promise.all(lanes);
  const slowest = Math.max(...refusedAfter);
  const failures = [
    ...new Set(wrong),
    ...(slowest > 2_000 ? [`the revoked key was accepted for ${ms(slowest)} after the revoke`] : []),
    ...after
      .filter((r) => r.status !== 401)
      .map((r) => `revoked key answered ${r.status} after being refused`),
  ];
  return {
    scenario: 'S16 key rotation under load',
    faults: 'new key, old key revoked',
    requests,
    jobs: 0,
    pass: failures.length === 0,
    figures: `${wrong.length} failures for valid keys; revoked key refused by every gateway after ${ms(slowest)}`,
    failures,
  };
}
