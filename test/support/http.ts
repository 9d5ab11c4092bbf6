import { buildOpenApiDocument, createResponseValidator } from '@dnc/api-contract';

const validator = createResponseValidator(buildOpenApiDocument());

export interface ApiResponse {
  status: number;
  headers: Headers;
  /** Parsed JSON body (undefined when empty). */
  // biome-ignore lint/suspicious/noExplicitAny: validated against the OpenAPI document before a test reads it
  body: any;
  /** The raw text, for leak checks. */
  text: string;
}

/**
 * fetch + OpenAPI conformance: every response an end-to-end test receives is checked against the
 * document (status, headers, body), so an undocumented status, field or header fails the test.
 */
export async function call(
  baseUrl: string,
  method: string,
  path: string,
  options: {
    apiKey?: string;
    idempotencyKey?: string;
    json?: unknown;
    body?: string;
    headers?: Record<string, string>;
  } = {},
): Promise<ApiResponse> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.apiKey !== undefined) headers['authorization'] = `Bearer ${options.apiKey}`;
  if (options.idempotencyKey !== undefined) headers['idempotency-key'] = options.idempotencyKey;
  let body = options.body;
  if (options.json !== undefined) {
    body = JSON.stringify(options.json);
    headers['content-type'] ??= 'application/json';
  }
  const res = await fetch(`${baseUrl}${path}`, { method, headers, body });
  const text = await res.text();
  let parsed: unknown;
  if (text) {
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = text;
    }
  }
  const routePath = path.split('?')[0]!;
  if (!routePath.startsWith('/openapi.json') && !routePath.startsWith('/docs')) {
    validator.assert({ method, route: routePath, status: res.status, headers: res.headers, body: parsed });
  }
  return { status: res.status, headers: res.headers, body: parsed, text };
}

/** What no response may ever contain: internals, provider details, stack traces, addresses. */
export const LEAK_PATTERN =
  /provider|chunk|attempt|balance|credential|tenant|stack|\bat [\w.<>]+ \(|node_modules|\b(?:\d{1,3}\.){3}\d{1,3}\b|localhost|ECONN|postgres|redis|nats|jetstream|grpc|connect ?error|\bcost\b/i;

/** `publicBaseUrl` is the one address a response may name (status_url and friends). */
export function expectNoLeak(res: ApiResponse, publicBaseUrl?: string): void {
  const headerText = [...res.headers.entries()]
    .filter(([k]) => !['date', 'content-length', 'keep-alive', 'connection', 'transfer-encoding'].includes(k))
    .map(([k, v]) => `${k}: ${v}`)
    .join('\n');
  let haystack = `${headerText}\n${res.text}`;
  if (publicBaseUrl) haystack = haystack.replaceAll(publicBaseUrl, '<public-base-url>');
  const m = LEAK_PATTERN.exec(haystack);
  if (m) throw new Error(`response leaks internals: "${m[0]}" in ${haystack.slice(0, 500)}`);
}
