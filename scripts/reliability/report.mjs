// The one table both suites print: scenario, faults injected, requests, jobs, pass/fail, figures.
import { environment } from '../bench/system.mjs';
import { ROOT } from './stack.mjs';

export const int = (x) => (Number.isFinite(x) ? Math.round(x).toLocaleString('en') : '-');

/**
 * A row: { scenario, faults, requests, jobs, pass, figures, failures: string[], known?: string }.
 * A `known` row failed only in ways another open issue owns (scripts/chaos/known.mjs); it is printed
 * as such and does not fail the run.
 */
export function printTable(title, mode, rows, startedEnv = environment(ROOT)) {
  const headers = ['scenario', 'faults injected', 'requests', 'jobs', 'result', 'figures'];
  const cells = rows.map((r) => [
    r.scenario,
    r.faults || '-',
    int(r.requests),
    int(r.jobs),
    r.pass ? 'pass' : r.known ? `FAIL (known: ${r.known})` : 'FAIL',
    r.figures || '',
  ]);
  const widths = headers.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i].length)));
  const line = (c) =>
    c
      .map((v, i) => v.padEnd(widths[i]))
      .join(' | ')
      .trimEnd();
  const e = startedEnv;
  const out = [
    '',
    `${title} (${mode}) - ${e.cpu_model}, ${e.cores} cores, ${e.memory_gib} GiB, node ${e.node}, commit ${(e.git_commit ?? 'unknown').slice(0, 10)}${e.git_dirty ? ' (dirty)' : ''}`,
    `load average ${e.load_average_at_start.join(' ')} at start; started ${e.started_at}`,
    line(headers),
    widths.map((w) => '-'.repeat(w)).join('-|-'),
    ...cells.map(line),
  ];
  const failed = rows.filter((r) => !r.pass && !r.known);
  for (const r of rows.filter((x) => !x.pass)) {
    out.push('', `FAIL${r.known ? ` (known: ${r.known})` : ''} ${r.scenario}:`);
    for (const f of (r.failures ?? []).slice(0, 12)) out.push(`  - ${f}`);
    if ((r.failures?.length ?? 0) > 12) out.push(`  ... ${r.failures.length - 12} more`);
  }
  const known = rows.filter((r) => !r.pass && r.known).length;
  out.push(
    '',
    `${title}: ${rows.length - failed.length - known} passed, ${failed.length} failed${known ? `, ${known} known failures of other issues` : ''}`,
  );
  process.stdout.write(`${out.join('\n')}\n`);
  return failed.length === 0 ? 0 : 1;
}
