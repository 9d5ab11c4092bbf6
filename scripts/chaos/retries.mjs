// The end of a chaos run's traffic: every request that got no answer (or a retryable one) is retried
// with its own Idempotency-Key until it answers, as a client would, so that each logical request
// counts once in the ledger the final invariants are read against.
import { api } from '../reliability/http.mjs';
import { sleep } from '../reliability/stack.mjs';
import { COUNTRY } from './world.mjs';

/**
 * Retry every v1 request that got no 200 with its own key until it answers 200 (409/429/503 wait as
 * told): each logical request then counts once in the ledger. Returns the failures (a retry that never
 * answered, or answered something else).
 */
export async function retryUnanswered(world, ledger, { concurrency = 8, timeoutMs = 60_000 } = {}) {
  const failures = [];
  const queue = ledger.unanswered.splice(0);
  let replayed = 0;
  const lane = async () => {
    for (let r = queue.shift(); r; r = queue.shift()) {
      const until = Date.now() + timeoutMs;
      for (;;) {
        const res = await api(world.publicBaseUrl, 'POST', '/v1/scrub', {
          key: r.org.apiKey,
          idem: r.idem,
          json: { country: COUNTRY, phones: r.phones },
        });
        if (res.status === 200) {
          ledger.verify(res.body, r.prohibited, `${r.kind} retry`);
          ledger.charge(r.org.orgId, r.phones.length);
          const wasReplay = res.headers.get('idempotency-replayed') === 'true';
          if (wasReplay) replayed++;
          ledger.note(r.org.orgId, {
            idem: r.idem,
            n: r.phones.length,
            kind: r.kind,
            status: 200,
            replayed: wasReplay,
            retried: Boolean(res.retried),
            charged: true,
            how: 'retry',
          });
          break;
        }
        const wait = res.status === 409 || res.status === 429 || res.status >= 500 || res.status === 0;
        if (!wait || Date.now() > until) {
          failures.push(`a v1 retry answered ${res.status} ${res.body?.error ?? res.error ?? ''}`);
          break;
        }
        await sleep(Math.max(250, Number(res.headers?.get('retry-after') ?? 1) * 1000));
      }
    }
  };
  await Promise.all(Array.from({ length: concurrency }, lane));
  return { failures: [...new Set(failures)], replayed };
}

/**
 * Retry every v2 submission that got no 202 with its own key until it answers with a job (409/429/503
 * wait as told); the job joins the ledger. Returns the failures and how many answered with a job.
 */
export async function retryUnansweredJobs(world, ledger, { timeoutMs = 60_000 } = {}) {
  const failures = [];
  let jobs = 0;
  for (const r of ledger.unansweredJobs.splice(0)) {
    const until = Date.now() + timeoutMs;
    for (;;) {
      const res = await api(world.publicBaseUrl, 'POST', '/v2/scrub', {
        key: r.org.apiKey,
        idem: r.idem,
        json: { country: COUNTRY, phones: r.phones },
      });
      if ((res.status === 202 || res.status === 200) && res.body?.job_id) {
        ledger.accept(r.org, res.body, r.idem);
        jobs++;
        break;
      }
      const wait = res.status === 409 || res.status === 429 || res.status >= 500 || res.status === 0;
      if (!wait || Date.now() > until) {
        failures.push(`a v2 retry answered ${res.status} ${res.body?.error ?? res.error ?? ''}`);
        break;
      }
      await sleep(Math.max(250, Number(res.headers?.get('retry-after') ?? 1) * 1000));
    }
  }
  return { failures: [...new Set(failures)], jobs };
}
