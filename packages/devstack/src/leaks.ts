/** What no public response may ever contain: internals, provider details, stack traces, addresses. */
export const LEAK_PATTERN =
  /provider|chunk|attempt|balance|credential|tenant|stack|\bat [\w.<>]+ \(|node_modules|\b(?:\d{1,3}\.){3}\d{1,3}\b|localhost|ECONN|postgres|redis|nats|jetstream|grpc|connect ?error|\bcost\b/i;

const UNCHECKED_HEADERS = ['date', 'content-length', 'keep-alive', 'connection', 'transfer-encoding'];

/**
 * The first leak in a response's headers and text, or undefined. `publicBaseUrl` is the one address
 * a response may name (status_url and friends).
 */
export function findLeak(
  headers: Iterable<[string, string]>,
  text: string,
  publicBaseUrl?: string,
): string | undefined {
  const headerText = [...headers]
    .filter(([k]) => !UNCHECKED_HEADERS.includes(k))
    .map(([k, v]) => `${k}: ${v}`)
    .join('\n');
  let haystack = `${headerText}\n${text}`;
  if (publicBaseUrl) haystack = haystack.replaceAll(publicBaseUrl, '<public-base-url>');
  const m = LEAK_PATTERN.exec(haystack);
  return m ? `"${m[0]}" in ${haystack.slice(Math.max(0, m.index - 200), m.index + 200)}` : undefined;
}
