// The job worker's own account of a job (its `job executed` log line: ids and timings only).
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
};

/**
 * The medians, over the jobs of `inputs` numbers whose worker logs are in `logDir`, of the worker's
 * phases: the input read (beside the first units since it is read segment by segment), reading and
 * checking until every unit answered, and the result rendered and stored. 'not logged' without any.
 */
export function workerPhases(logDir, inputs) {
  const lines = readdirSync(logDir)
    .filter((f) => f.startsWith('job-worker'))
    .flatMap((f) => readFileSync(path.join(logDir, f), 'utf8').split('\n'))
    .filter((l) => l.includes('"job executed"'))
    .map((l) => JSON.parse(l))
    .filter((l) => l.inputs === inputs);
  if (lines.length === 0) return 'not logged';
  return ['read_ms', 'check_ms', 'store_ms']
    .map((k) => `${median(lines.map((l) => l[k])).toFixed(0)} ms`)
    .join(' / ');
}
