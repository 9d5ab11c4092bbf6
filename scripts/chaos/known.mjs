// Failures the suite finds that belong to another open issue, each with its owner and reason
// (docs/reliability.md lists them). A row whose every failure matches an entry is printed as
// "FAIL (known: ...)" and does not fail the run; any other failure does. Remove an entry when its
// issue lands: the row must then pass.
export const KNOWN = [];

/** The entries explaining every failure of a row, or undefined when one failure is unexplained. */
export function knownFor(row) {
  if (row.pass || !row.failures?.length) return undefined;
  const id = row.scenario.split(' ')[0];
  const matches = row.failures.map((f) => KNOWN.find((k) => k.scenarios.includes(id) && k.pattern.test(f)));
  if (matches.some((m) => !m)) return undefined;
  return [...new Set(matches.map((m) => m.issue))].join(', ');
}
