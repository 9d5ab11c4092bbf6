import { buildOpenApiDocument } from '@dnc/api-contract';
import { createResponseValidator, findLeak } from '@dnc/devstack';

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

/** `publicBaseUrl` is the one address a response may name (status_url and friends). */
export function expectNoLeak(res: ApiResponse, publicBaseUrl?: string): void {
  const leak = findLeak(res.headers.entries(), res.text, publicBaseUrl);
  if (leak) throw new Error(`response leaks internals: ${leak}`);
}
