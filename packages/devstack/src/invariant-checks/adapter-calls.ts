import type { Violation } from '../invariants.js';

/**
 * The worker logs one line per adapter call of a job (`msg: "adapter call"` with job_id, attempt,
 * unit and try; see services/job-scheduler/src/worker/execute.ts). Read back here: each unit of an
 * execution attempt is called at most `max_tries` times (its bounded retries), and a job is called
 * under no more execution attempts than its row records. More means work (and, with a paying
 * registry, cost) done twice: a sibling call running on after its lease was lost, or a redelivery
 * executing a job another worker holds.
 */
export interface AdapterCallLine {
  job_id: string;
  attempt: number;
  unit: number;
  try: number;
  max_tries: number;
}

export function adapterCallLines(logs: readonly { text: string }[]): AdapterCallLine[] {
  const out: AdapterCallLine[] = [];
  for (const { text } of logs) {
    for (const line of text.split('\n')) {
      if (!line.includes('"adapter call"')) continue;
      try {
        const l = JSON.parse(line.slice(line.indexOf('{'))) as Partial<AdapterCallLine> & { msg?: string };
        if (l.msg === 'adapter call' && typeof l.job_id === 'string') out.push(l as AdapterCallLine);
      } catch {
        // a line cut by the pipe: not a complete record
      }
    }
  }
  return out;
}

export function adapterCallViolations(
  lines: readonly AdapterCallLine[],
  attemptsOf: ReadonlyMap<string, number>,
): Violation[] {
  const perUnit = new Map<string, { n: number; max: number }>();
  const attempts = new Map<string, number>();
  for (const l of lines) {
    const key = `${l.job_id} ${l.attempt} ${l.unit}`;
    const u = perUnit.get(key) ?? { n: 0, max: l.max_tries };
    u.n++;
    perUnit.set(key, u);
    attempts.set(l.job_id, Math.max(attempts.get(l.job_id) ?? 0, l.attempt));
  }
  const out: Violation[] = [];
  for (const [key, u] of perUnit) {
    if (u.n <= u.max) continue;
    const [job, attempt, unit] = key.split(' ');
    out.push({
      invariant: 'adapter_calls',
      detail: `job ${job} attempt ${attempt} called the adapter ${u.n} times for unit ${unit} (at most ${u.max})`,
    });
  }
  for (const [job, highest] of attempts) {
    const recorded = attemptsOf.get(job);
    if (recorded !== undefined && highest > recorded)
      out.push({
        invariant: 'adapter_calls',
        detail: `job ${job} called the adapter under attempt ${highest} but records ${recorded} attempt(s)`,
      });
  }
  return out;
}
