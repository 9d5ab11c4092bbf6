// The suites' HTTP client: node:http with a keep-alive pool, headers sent exactly as given
// (duplicates included), never throwing: a failure is an answer with status 0 and the error.
import http from 'node:http';

const agent = new http.Agent({ keepAlive: true, maxSockets: 32 });

/**
 * Send one request with node:http (headers as given, duplicates included). Resolves with status,
 * headers, text; `sent: false` when the client itself refused the request (an illegal header byte).
 */
export async function send(baseUrl, req, timeoutMs = 30_000) {
  const res = await sendOnce(baseUrl, req, timeoutMs);
  // A keep-alive socket the server closed as we reused it: Node's documented case for one retry. The
  // first attempt is kept (`retried`): the server may have received it all the same.
  if (res.retry) {
    const { error, code, phase, afterMs } = res;
    return { ...(await sendOnce(baseUrl, req, timeoutMs)), retried: { error, code, phase, afterMs } };
  }
  return res;
}

/**
 * One attempt. A failure says what it was (`error`, `code`), whether it came before the answer's
 * headers or while its body was read (`phase`), how long after sending (`afterMs`) and whether the
 * socket was a reused keep-alive one (`reused`).
 */
function sendOnce(baseUrl, req, timeoutMs) {
  const url = new URL(baseUrl);
  const t0 = performance.now();
  return new Promise((resolveP) => {
    let r;
    let phase = 'request';
    const failed = (error, extra = {}) =>
      resolveP({
        sent: true,
        status: 0,
        error: String(error?.message ?? error),
        code: error?.code,
        phase,
        reused: Boolean(r?.reusedSocket),
        afterMs: Math.round(performance.now() - t0),
        ...extra,
      });
    try {
      // Headers as a raw list keep duplicates; Node then adds neither Host nor Content-Length itself.
      const flat = ['host', url.host];
      const names = new Set(req.headers.map(([k]) => k.toLowerCase()));
      if (req.body && !names.has('transfer-encoding')) flat.push('content-length', String(req.body.length));
      for (const [k, v] of req.headers) flat.push(k, v);
      r = http.request(
        { host: url.hostname, port: url.port, method: req.method, path: req.path, headers: flat, agent },
        (res) => {
          phase = 'response';
          const chunks = [];
          res.on('data', (c) => chunks.push(c));
          res.on('end', () =>
            resolveP({
              sent: true,
              status: res.statusCode,
              headers: new Headers(
                Object.entries(res.headers).map(([k, v]) => [k, Array.isArray(v) ? v.join(', ') : String(v)]),
              ),
              text: Buffer.concat(chunks).toString('utf8'),
            }),
          );
          res.on('error', (error) => failed(error));
        },
      );
    } catch (error) {
      return resolveP({ sent: false, error: String(error) });
    }
    r.setTimeout(timeoutMs, () => r.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    r.on('error', (error) =>
      failed(error, { retry: phase === 'request' && r.reusedSocket && error.code === 'ECONNRESET' }),
    );
    r.end(req.body);
  });
}

/** A JSON call as a customer makes it: `{ status, headers, body, ms }` (status 0: no answer). */
export async function api(baseUrl, method, path, { key, idem, json, timeoutMs } = {}) {
  const headers = [];
  if (key) headers.push(['authorization', `Bearer ${key}`]);
  if (idem) headers.push(['idempotency-key', idem]);
  let body;
  if (json !== undefined) {
    body = Buffer.from(JSON.stringify(json));
    headers.push(['content-type', 'application/json']);
  } else if (method === 'POST') {
    headers.push(['content-length', '0']);
  }
  const t0 = performance.now();
  const res = await send(baseUrl, { method, path, headers, body }, timeoutMs);
  const ms = performance.now() - t0;
  let parsed;
  try {
    parsed = res.text ? JSON.parse(res.text) : undefined;
  } catch {
    parsed = undefined;
  }
  return {
    status: res.status ?? 0,
    headers: res.headers,
    body: parsed,
    text: res.text ?? '',
    ms,
    error: res.error,
    // No answer: what the failure was. `retried`: a first attempt failed on a reused socket.
    code: res.code,
    phase: res.phase,
    reused: res.reused,
    afterMs: res.afterMs,
    retried: res.retried,
  };
}
