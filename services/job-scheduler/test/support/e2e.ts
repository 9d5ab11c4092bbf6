import pg from 'pg';
import { expect } from 'vitest';
import { type ApiResponse, call, expectNoLeak } from '../../../../test/support/http.js';
import { JOB_FIELDS } from '../../../../test/support/job-resource.js';
import type { SeededOrg } from '../../../../test/support/seed.js';
import type { TestStack } from '../../../../test/support/stack.js';

// Shared by the v2 job end-to-end suites (issue 6): polling, quota, and the leak checks run after
// every test are the invariant checker's (test/support/invariants.ts).

export { JOB_FIELDS };

export function v2(stack: TestStack, org: () => SeededOrg) {
  let n = 0;
  const api = {
    key: () => `jobs-e2e-${Date.now()}-${n++}`,
    async request(
      method: string,
      path: string,
      opts: { json?: unknown; idempotencyKey?: string; apiKey?: string } = {},
    ) {
      const res = await call(stack.baseUrl, method, path, { ...opts, apiKey: opts.apiKey ?? org().apiKey });
      // Spec, Endpoints/Common: every v2 response, errors included, is transient-encrypted.
      expect(res.headers.get('x-retention')).toBe('transient-encrypted');
      // `transfer-encoding: chunked` is HTTP framing of a streamed result, not an internal detail.
      const headers = new Headers(res.headers);
      headers.delete('transfer-encoding');
      expectNoLeak({ ...res, headers }, stack.baseUrl);
      return res;
    },
    submit(phones: string[], opts: { idempotencyKey?: string; apiKey?: string; country?: string } = {}) {
      return api.request('POST', '/v2/scrub', {
        json: { country: opts.country ?? 'mx', phones },
        idempotencyKey: opts.idempotencyKey ?? api.key(),
        apiKey: opts.apiKey,
      });
    },
    status: (id: string, apiKey?: string) => api.request('GET', `/v2/scrub/${id}`, { apiKey }),
    result: (id: string, apiKey?: string) => api.request('GET', `/v2/scrub/${id}/result`, { apiKey }),
    cancel: (id: string, apiKey?: string) => api.request('POST', `/v2/scrub/${id}/cancel`, { apiKey }),
    async waitFor(id: string, pred: (status: string) => boolean, timeoutMs = 30_000): Promise<ApiResponse> {
      const deadline = Date.now() + timeoutMs;
      let last: ApiResponse | undefined;
      while (Date.now() < deadline) {
        last = await api.status(id);
        if (last.status === 200 && pred(last.body.status)) return last;
        await new Promise((r) => setTimeout(r, 100));
      }
      throw new Error(`job never reached the expected state (last ${last?.status} ${last?.body?.status})`);
    },
    async quota(orgId = org().orgId, country = 'mx') {
      const q = (await stack.admin(['quota', 'show', '--org', orgId])) as {
        accounts: { country: string; used: number; reserved: number }[];
      };
      const a = q.accounts.find((x) => x.country === country);
      return { used: Number(a?.used ?? 0), reserved: Number(a?.reserved ?? 0) };
    },
  };
  return api;
}

/** A job resource: exactly the spec's fields (plus `error` only when failed/expired). */
export function expectJobResource(body: Record<string, unknown>, baseUrl: string): void {
  const expected: string[] = [...JOB_FIELDS];
  if (body['status'] === 'failed' || body['status'] === 'expired') expected.push('error');
  if (body['cancel_requested'] === true) expected.push('cancel_requested');
  // In the spec's order too (the response schemas once put `status` last).
  expect(Object.keys(body)).toEqual(expected);
  const id = body['job_id'] as string;
  expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
  expect(body['status_url']).toBe(`${baseUrl}/v2/scrub/${id}`);
  expect(body['result_url']).toBe(`${baseUrl}/v2/scrub/${id}/result`);
  expect(body['cancel_url']).toBe(`${baseUrl}/v2/scrub/${id}/cancel`);
  for (const f of ['created_at', 'expires_at'])
    expect(body[f]).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/);
}

/** Every stored value of the jobs schema, text as is and bytea as raw bytes, searched for numbers. */
export async function plaintextInPostgres(databaseUrl: string, needles: string[]): Promise<string[]> {
  const db = new pg.Client({ connectionString: databaseUrl });
  await db.connect();
  try {
    const found: string[] = [];
    const tables = await db.query<{ table_name: string }>(
      `SELECT table_name FROM information_schema.tables WHERE table_schema = 'jobs'`,
    );
    for (const { table_name } of tables.rows) {
      const rows = await db.query(`SELECT * FROM jobs."${table_name}"`);
      for (const row of rows.rows)
        for (const v of Object.values(row)) {
          const bytes = Buffer.isBuffer(v) ? v : Buffer.from(String(v));
          for (const n of needles) if (bytes.includes(Buffer.from(n))) found.push(`${table_name}:${n}`);
        }
    }
    return found;
  } finally {
    await db.end();
  }
}
