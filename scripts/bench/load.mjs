// The load generator of the throughput phases (autocannon, in the bench process): the service's
// single-number phase and the HTTP floor use the same client, connections and duration.
import autocannon from 'autocannon';

/**
 * `connections` keep-alive connections POSTing `bodies` (round robin) to `url` for `seconds`.
 * `headers(n)` gives the extra headers of request n (a unique Idempotency-Key, say); `overallRate`
 * caps the requests per second of all connections together (none: as fast as answers come).
 */
export function autocannonRun({
  url,
  connections,
  seconds,
  bodies,
  headers = () => ({}),
  baseHeaders = {},
  overallRate,
}) {
  let n = 0;
  return new Promise((resolve, reject) => {
    const instance = autocannon(
      {
        url,
        method: 'POST',
        connections,
        duration: seconds,
        ...(overallRate ? { overallRate } : {}),
        headers: { 'content-type': 'application/json', ...baseHeaders },
        requests: [
          {
            setupRequest: (req) => {
              n++;
              return { ...req, body: bodies[n % bodies.length], headers: { ...req.headers, ...headers(n) } };
            },
          },
        ],
      },
      (error, result) => (error ? reject(error) : resolve(result)),
    );
    autocannon.track(instance, {
      renderProgressBar: false,
      renderResultsTable: false,
      renderLatencyTable: false,
    });
  });
}

/** The figures of an autocannon result the report uses. */
export function loadFigures(r) {
  const statusCodes = Object.fromEntries(
    Object.entries(r.statusCodeStats ?? {}).map(([k, v]) => [k, v.count]),
  );
  const ok = statusCodes['200'] ?? r['2xx'];
  return {
    duration_s: r.duration,
    connections: r.connections,
    requests: r.requests.total,
    ok,
    rps_mean: Math.round(ok / r.duration),
    latency_ms: { p50: r.latency.p50, p90: r.latency.p90, p99: r.latency.p99, max: r.latency.max },
    errors: r.errors + r.timeouts + r.non2xx,
    non_2xx: r.non2xx,
    socket_errors: r.errors,
    timeouts: r.timeouts,
    status_codes: statusCodes,
  };
}
