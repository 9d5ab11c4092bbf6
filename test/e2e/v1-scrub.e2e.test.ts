import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ApiResponse, call, expectNoLeak } from '../support/http.js';
import { loadRegistry, type SeededOrg, seedOrg } from '../support/seed.js';
import { startTestStack, type TestStack } from '../support/stack.js';

// Spec: POST /v1/scrub, ScrubRequest, ScrubResult, Idempotency, Errors, Limits. Issue 5.
describe('POST /v1/scrub end to end (issue 5)', () => {
  let stack: TestStack;
  let org: SeededOrg;
  let n = 0;
  const key = () => `v1-e2e-${Date.now()}-${n++}`;

  const scrub = async (json: unknown, opts: { apiKey?: string; idempotencyKey?: string } = {}) => {
    const res = await call(stack.baseUrl, 'POST', '/v1/scrub', {
      apiKey: opts.apiKey ?? org.apiKey,
      idempotencyKey: opts.idempotencyKey ?? key(),
      json,
    });
    expectV1(res);
    return res;
  };

  /** Spec, Endpoints/Common: all v1 responses, errors included, carry the zero-retention headers. */
  function expectV1(res: ApiResponse) {
    expect(res.headers.get('x-retention')).toBe('zero');
    expect(res.headers.get('cache-control')).toBe('no-store, max-age=0');
    expectNoLeak(res);
  }

  function expectRateLimitHeaders(res: ApiResponse) {
    for (const h of ['limit', 'remaining', 'reset']) {
      const x = res.headers.get(`x-ratelimit-${h}`);
      expect(x, h).toMatch(/^\d+$/);
      expect(res.headers.get(`ratelimit-${h}`)).toBe(x);
    }
  }

  const quotaUsed = async (orgId: string, country: string) => {
    const q = (await stack.admin(['quota', 'show', '--org', orgId])) as {
      accounts: { country: string; used: number; reserved: number }[];
    };
    const a = q.accounts.find((x) => x.country === country);
    return { used: Number(a?.used ?? 0), reserved: Number(a?.reserved ?? 0) };
  };
  const usageCount = async (orgId: string) =>
    ((await stack.admin(['usage', '--org', orgId])) as { records: unknown[] }).records.length;

  beforeAll(async () => {
    stack = await startTestStack({ label: 'v1', countries: ['mx', 'ar', 'co'] });
    org = await seedOrg(stack, ['mx', 'ar', 'co']);
    await loadRegistry(stack, 'co', ['+57 300 123 4567', '(601) 234 5678']);
    await loadRegistry(stack, 'mx', ['+52 55 1234 5678']);
    await loadRegistry(stack, 'ar', ['+54 11 4123 4567']);
  });
  afterAll(async () => {
    await stack?.teardown();
  });

  describe('classification (spec: ScrubResult invariants; DOMAIN: every written form of a registered line)', () => {
    it('co: every spelling of a registered number is prohibited; order, duplicates and originals kept', async () => {
      const phones = [
        '+57 300 123 4567',
        '3001234567',
        'hello',
        '(300) 123-4567',
        '300.123.4567',
        'tel:+57-300-123-4567',
        '3109999999',
        '',
        '+52 55 1234 5678',
        '601 234 5678',
        '3001234567',
        '12',
      ];
      const res = await scrub({ country: 'co', phones });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({
        prohibited_numbers_to_call: [
          '+57 300 123 4567',
          '3001234567',
          '(300) 123-4567',
          '300.123.4567',
          'tel:+57-300-123-4567',
          '601 234 5678',
          '3001234567',
        ],
        safe_numbers_to_call: ['3109999999'],
        invalid_numbers: [
          { input: 'hello', reason: 'unparseable' },
          { input: '', reason: 'unparseable' },
          { input: '+52 55 1234 5678', reason: 'wrong_country' },
          { input: '12', reason: 'invalid_length' },
        ],
        summary: { total_checked: 12, prohibited_numbers: 7, safe_numbers: 1, invalid_numbers: 4 },
      });
      expect(res.headers.get('idempotency-replayed')).toBeNull();
      expectRateLimitHeaders(res);
    });

    it('mx: the abolished 044/045 and +52 1 forms of a registered line are never safe', async () => {
      const phones = [
        '+52 55 1234 5678',
        '5512345678',
        '+52 1 55 1234 5678',
        '044 55 1234 5678',
        '045 55 1234 5678',
        '+52 55 9999 0000',
      ];
      const res = await scrub({ country: 'mx', phones });
      expect(res.status).toBe(200);
      expect(res.body.safe_numbers_to_call).toEqual(['+52 55 9999 0000']);
      expect(res.body.prohibited_numbers_to_call).toEqual(phones.slice(0, 5));
    });

    it('ar: mobile 9 and domestic 15 forms find the 10-digit registered line', async () => {
      const phones = [
        '+54 9 11 4123 4567',
        '011 15 4123 4567',
        '(011) 4123-4567',
        '+54 11 4123 4567',
        '+54 11 5555 0000',
      ];
      const res = await scrub({ country: 'ar', phones });
      expect(res.status).toBe(200);
      expect(res.body.prohibited_numbers_to_call).toEqual(phones.slice(0, 4));
      expect(res.body.safe_numbers_to_call).toEqual(['+54 11 5555 0000']);
    });

    it('empty phones is valid and returns zero counts', async () => {
      const res = await scrub({ country: 'co', phones: [] });
      expect(res.status).toBe(200);
      expect(res.body.summary).toEqual({
        total_checked: 0,
        prohibited_numbers: 0,
        safe_numbers: 0,
        invalid_numbers: 0,
      });
    });

    it('exactly 10,000 inputs are answered; 10,001 are 413 pointing to /v2/scrub', async () => {
      const phones = Array.from({ length: 10_000 }, (_, i) =>
        i % 2 ? '+57 300 123 4567' : `31${String(i).padStart(8, '0')}`,
      );
      const ok = await scrub({ country: 'co', phones });
      expect(ok.status).toBe(200);
      expect(ok.body.summary.total_checked).toBe(10_000);
      expect(ok.body.summary.prohibited_numbers).toBe(5_000);
      const over = await scrub({ country: 'co', phones: [...phones, '3001234567'] });
      expect(over.status).toBe(413);
      expect(over.body.error).toBe('payload_too_large');
      expect(over.body.message).toMatch(/\/v2\/scrub/);
    });
  });

  describe('requests in flight together (issue 9: batched internal calls)', () => {
    const POOL = [
      '+57 300 123 4567',
      '3001234567',
      '(601) 234 5678',
      '601 234 5678',
      '3109999999',
      '+57 311 000 0001',
      'hello',
      '',
      '12',
      '+52 55 1234 5678',
      'tel:+57-300-123-4567',
      '320 555 0101',
    ];
    const bodyOf = (i: number) => ({
      country: 'co',
      phones: Array.from({ length: 1 + (i % 5) }, (_, j) => POOL[(i * 7 + j * 3) % POOL.length]!),
    });

    it('each request gets exactly its own answer when they share Admit, Check and Complete calls', async () => {
      const o = await seedOrg(stack, ['co'], { name: 'Concurrent' });
      await stack.admin(['org', 'set-rate-limit', '--org', o.orgId, '--limit', '1000']);
      const bodies = Array.from({ length: 48 }, (_, i) => bodyOf(i));
      // A request of more than 256 inputs is checked alone, beside the shared calls.
      bodies.push({ country: 'co', phones: Array.from({ length: 300 }, (_, j) => POOL[j % POOL.length]!) });
      // One at a time first: nothing to share.
      const alone: ApiResponse[] = [];
      for (const b of bodies) alone.push(await scrub(b, { apiKey: o.apiKey }));
      const metrics = async () => {
        const text = await (
          await fetch(`http://127.0.0.1:${stack.addresses.metrics.gateway}/metrics`)
        ).text();
        const read = (part: string) =>
          Number(
            text.match(
              new RegExp(`dnc_gateway_batch_size_${part}\\{[^}]*call="check"[^}]*\\} ([0-9.e+]+)`),
            )?.[1] ?? 0,
          );
        return { sum: read('sum'), count: read('count') };
      };
      const before = await metrics();
      const together = await Promise.all(bodies.map((b) => scrub(b, { apiKey: o.apiKey })));
      const after = await metrics();
      together.forEach((res, i) => {
        expect(res.status, `request ${i}`).toBe(200);
        expect(res.body, `request ${i}`).toEqual(alone[i]!.body);
        expect(res.body.summary.total_checked).toBe(bodies[i]!.phones.length);
      });
      // The shared calls did happen: fewer Check calls than requests.
      const calls = after.count - before.count;
      const requests = after.sum - before.sum;
      expect(requests).toBe(bodies.length - 1);
      expect(calls).toBeLessThan(requests);
      // Every request was charged once, for its own inputs.
      const inputs = bodies.reduce((n, b) => n + b.phones.length, 0);
      expect(await quotaUsed(o.orgId, 'co')).toEqual({ used: 2 * inputs, reserved: 0 });
      expect(await usageCount(o.orgId)).toBe(2 * bodies.length);
    });

    it('check order holds when authentication rides with Admit: 401 before 400, both for small and large bodies', async () => {
      const unknown = `${org.apiKey.slice(0, -4)}zzzz`;
      const small = await call(stack.baseUrl, 'POST', '/v1/scrub', {
        apiKey: unknown,
        idempotencyKey: key(),
        json: { country: 'xx', phones: [1] },
      });
      const noKey = await call(stack.baseUrl, 'POST', '/v1/scrub', {
        apiKey: unknown,
        json: { country: 'co', phones: [] },
      });
      // Declared above 64 KiB: authenticated before the body is read.
      const large = await call(stack.baseUrl, 'POST', '/v1/scrub', {
        apiKey: unknown,
        idempotencyKey: key(),
        json: { country: 'co', phones: Array.from({ length: 8_000 }, () => '3001234567'), extra: true },
      });
      for (const res of [small, noKey, large]) {
        expectV1(res);
        expect([res.status, res.body]).toEqual([401, { error: 'invalid_key' }]);
        expect([...res.headers.keys()].filter((h) => h.includes('ratelimit'))).toEqual([]);
      }
      // A known key with the same bad body: the 400, with the rate-limit figures of the request.
      const invalid = await scrub({ country: 'xx', phones: [1] });
      expect([invalid.status, invalid.body.error]).toEqual([400, 'validation_error']);
      expectRateLimitHeaders(invalid);
    });
  });

  describe('request checks (400 / 413)', () => {
    it('an input of 64 characters is accepted, 65 is 400', async () => {
      const at = `+57 300 123 4567${' '.repeat(48)}`;
      expect(at.length).toBe(64);
      expect((await scrub({ country: 'co', phones: [at] })).status).toBe(200);
      const past = await scrub({ country: 'co', phones: [`${at} `] });
      expect(past.status).toBe(400);
      expect(past.body.error).toBe('validation_error');
    });

    it('64 characters are code points end to end: 64 emoji are answered and charged once, 65 are 400 (issue 14 item 8)', async () => {
      // Each emoji is one character and two UTF-16 units: every hop must count the same 64.
      const at = '\u{1F4DE}'.repeat(64);
      const before = await quotaUsed(org.orgId, 'co');
      const ok = await scrub({ country: 'co', phones: [at, '3001234567'] });
      expect(ok.status).toBe(200);
      expect(ok.body.invalid_numbers).toEqual([{ input: at, reason: 'unparseable' }]);
      expect(ok.body.summary).toMatchObject({ total_checked: 2, invalid_numbers: 1 });
      const past = await scrub({ country: 'co', phones: [`${at}\u{1F4DE}`] });
      expect([past.status, past.body.error]).toEqual([400, 'validation_error']);
      expect(await quotaUsed(org.orgId, 'co')).toEqual({ used: before.used + 2, reserved: 0 });
    });

    it.each([
      ['unknown top-level field', { country: 'co', phones: [], extra: 1 }],
      ['unknown country', { country: 'us', phones: [] }],
      ['phones not an array', { country: 'co', phones: '3001234567' }],
      ['a phone that is not a string', { country: 'co', phones: [3001234567] }],
      ['missing country', { phones: [] }],
      ['the spec fields of another product', { country: 'co', numbers: [] }],
    ])('%s is 400 validation_error', async (_name, body) => {
      const res = await scrub(body);
      expect(res.status).toBe(400);
      expect(res.body.error).toBe('validation_error');
      expectRateLimitHeaders(res);
    });

    it('CSV or any non-JSON body is 400 and never parsed as data', async () => {
      for (const [type, body] of [
        ['text/csv', 'country,phone\nco,3001234567\n'],
        ['text/plain', '{"country":"co","phones":[]}'],
        ['application/json', 'country=co&phones=3001234567'],
      ]) {
        const res = await call(stack.baseUrl, 'POST', '/v1/scrub', {
          apiKey: org.apiKey,
          idempotencyKey: key(),
          body,
          headers: { 'content-type': type! },
        });
        expectV1(res);
        expect(res.status, type).toBe(400);
        expect(res.body.error).toBe('validation_error');
        expect(res.text).not.toMatch(/3001234567|country=/);
      }
    });

    it('a body of exactly 26,214,400 bytes is read; one byte more is 413', async () => {
      const core = JSON.stringify({ country: 'co', phones: ['3001234567'] });
      const at = core.slice(0, -1) + ' '.repeat(26_214_400 - core.length) + '}';
      expect(Buffer.byteLength(at)).toBe(26_214_400);
      const ok = await call(stack.baseUrl, 'POST', '/v1/scrub', {
        apiKey: org.apiKey,
        idempotencyKey: key(),
        body: at,
        headers: { 'content-type': 'application/json' },
      });
      expect(ok.status).toBe(200);
      const past = await call(stack.baseUrl, 'POST', '/v1/scrub', {
        apiKey: org.apiKey,
        idempotencyKey: key(),
        body: `${at} `,
        headers: { 'content-type': 'application/json' },
      });
      expectV1(past);
      expect(past.status).toBe(413);
      expect(past.body.error).toBe('payload_too_large');
    });

    it('Idempotency-Key: missing, empty, over 255, with a space or non-ASCII is 400; 255 visible characters pass', async () => {
      const body = { country: 'co', phones: ['3001234567'] };
      const missing = await call(stack.baseUrl, 'POST', '/v1/scrub', { apiKey: org.apiKey, json: body });
      expectV1(missing);
      expect(missing.status).toBe(400);
      for (const bad of ['', 'a'.repeat(256), 'has space', 'clé']) {
        const res = await scrub(body, { idempotencyKey: bad });
        expect(res.status, JSON.stringify(bad)).toBe(400);
        expect(res.body.error).toBe('validation_error');
      }
      expect((await scrub(body, { idempotencyKey: `${'k'.repeat(254)}!` })).status).toBe(200);
    });

    it('a repeated Idempotency-Key header is 400', async () => {
      const res = await new Promise<{ status: number; body: string; headers: http.IncomingHttpHeaders }>(
        (resolve, reject) => {
          const url = new URL(`${stack.baseUrl}/v1/scrub`);
          const req = http.request(
            {
              host: url.hostname,
              port: url.port,
              path: url.pathname,
              method: 'POST',
              headers: {
                authorization: `Bearer ${org.apiKey}`,
                'content-type': 'application/json',
                'idempotency-key': ['one', 'two'],
              },
            },
            (r) => {
              let data = '';
              r.on('data', (c) => {
                data += c;
              });
              r.on('end', () => resolve({ status: r.statusCode ?? 0, body: data, headers: r.headers }));
            },
          );
          req.on('error', reject);
          req.end(JSON.stringify({ country: 'co', phones: [] }));
        },
      );
      expect(res.status).toBe(400);
      expect(JSON.parse(res.body).error).toBe('validation_error');
      expect(res.headers['x-retention']).toBe('zero');
    });
  });

  describe('authentication (401) and entitlement (402 / 403)', () => {
    it('missing, malformed, unknown and revoked keys are 401 invalid_key with x-retention and no rate-limit headers', async () => {
      const extra = (await stack.admin(['key', 'create', '--org', org.orgId])) as {
        key_id: string;
        api_key: string;
      };
      await stack.admin(['key', 'revoke', '--key-id', extra.key_id]);
      const attempts: ApiResponse[] = [
        await call(stack.baseUrl, 'POST', '/v1/scrub', {
          idempotencyKey: key(),
          json: { country: 'co', phones: [] },
        }),
        await call(stack.baseUrl, 'POST', '/v1/scrub', {
          idempotencyKey: key(),
          json: { country: 'co', phones: [] },
          headers: { authorization: 'Basic abc' },
        }),
        await scrub({ country: 'co', phones: [] }, { apiKey: `${org.apiKey.slice(0, -4)}zzzz` }),
        await scrub({ country: 'co', phones: [] }, { apiKey: extra.api_key }),
      ];
      for (const res of attempts) {
        expectV1(res);
        expect(res.status).toBe(401);
        expect(res.body).toEqual({ error: 'invalid_key' });
        expect([...res.headers.keys()].filter((h) => h.includes('ratelimit'))).toEqual([]);
      }
    });

    it('rotation: a second key works while the first is active, and after the first is revoked', async () => {
      const second = (await stack.admin(['key', 'create', '--org', org.orgId])) as {
        key_id: string;
        api_key: string;
      };
      expect((await scrub({ country: 'co', phones: [] }, { apiKey: second.api_key })).status).toBe(200);
      expect((await scrub({ country: 'co', phones: [] })).status).toBe(200);
    });

    it('402 subscription_inactive, 403 account_suspended / activation_incomplete / country_not_in_plan', async () => {
      const other = await seedOrg(stack, ['co', 'mx'], { name: 'Entitlements' });
      // es is a technical code only: it passes the schema and is refused at admission.
      let res = await scrub({ country: 'es', phones: [] }, { apiKey: other.apiKey });
      expect([res.status, res.body.error]).toEqual([403, 'country_not_in_plan']);
      res = await scrub({ country: 'ar', phones: [] }, { apiKey: other.apiKey });
      expect([res.status, res.body.error]).toEqual([403, 'country_not_in_plan']);
      await stack.admin(['purchase', 'lapse', '--purchase', other.purchases['mx']!]);
      res = await scrub({ country: 'mx', phones: [] }, { apiKey: other.apiKey });
      expect([res.status, res.body.error]).toEqual([402, 'subscription_inactive']);
      expectRateLimitHeaders(res);
      await stack.admin(['org', 'activation', '--org', other.orgId, '--incomplete']);
      res = await scrub({ country: 'co', phones: [] }, { apiKey: other.apiKey });
      expect([res.status, res.body.error]).toEqual([403, 'activation_incomplete']);
      await stack.admin(['org', 'activation', '--org', other.orgId, '--complete']);
      await stack.admin(['org', 'suspend', '--org', other.orgId]);
      res = await scrub({ country: 'co', phones: [] }, { apiKey: other.apiKey });
      expect([res.status, res.body.error]).toEqual([403, 'account_suspended']);
      await stack.admin(['org', 'reinstate', '--org', other.orgId]);
      expect((await scrub({ country: 'co', phones: [] }, { apiKey: other.apiKey })).status).toBe(200);
    });

    it('a paid mx purchase waiting for activation is 503 country_service_temporarily_unavailable', async () => {
      const o = (await stack.admin(['org', 'create', '--name', 'Pending'])) as { org_id: string };
      const k = (await stack.admin(['key', 'create', '--org', o.org_id])) as { api_key: string };
      const p = (await stack.admin(['purchase', 'create', '--org', o.org_id, '--country', 'mx'])) as {
        purchase_id: string;
      };
      let res = await scrub({ country: 'mx', phones: [] }, { apiKey: k.api_key });
      expect([res.status, res.body.error]).toEqual([402, 'subscription_inactive']);
      await stack.admin(['purchase', 'pay', '--purchase', p.purchase_id]);
      res = await scrub({ country: 'mx', phones: [] }, { apiKey: k.api_key });
      expect([res.status, res.body.error]).toEqual([503, 'country_service_temporarily_unavailable']);
      await stack.admin(['purchase', 'activate', '--purchase', p.purchase_id]);
      expect((await scrub({ country: 'mx', phones: [] }, { apiKey: k.api_key })).status).toBe(200);
    });
  });

  describe('idempotency (409) and replays', () => {
    it('an exact retry is recalculated: 200, Idempotency-Replayed: true, no quota, no second usage record', async () => {
      const o = await seedOrg(stack, ['co', 'mx'], { name: 'Replays' });
      const body = { country: 'co', phones: ['+57 300 123 4567', '3109999999', 'x'] };
      const k = key();
      const first = await scrub(body, { apiKey: o.apiKey, idempotencyKey: k });
      expect(first.status).toBe(200);
      const used = await quotaUsed(o.orgId, 'co');
      expect(used).toEqual({ used: 3, reserved: 0 });
      expect(await usageCount(o.orgId)).toBe(1);
      const again = await scrub(body, { apiKey: o.apiKey, idempotencyKey: k });
      expect(again.status).toBe(200);
      expect(again.headers.get('idempotency-replayed')).toBe('true');
      expect(again.body).toEqual(first.body);
      expect(await quotaUsed(o.orgId, 'co')).toEqual(used);
      expect(await usageCount(o.orgId)).toBe(1);
      const reused = await scrub(
        { ...body, phones: [...body.phones].reverse() },
        { apiKey: o.apiKey, idempotencyKey: k },
      );
      expect([reused.status, reused.body.error]).toEqual([409, 'idempotency_key_reused']);
      const otherCountry = await scrub({ ...body, country: 'mx' }, { apiKey: o.apiKey, idempotencyKey: k });
      expect([otherCountry.status, otherCountry.body.error]).toEqual([409, 'idempotency_key_reused']);
      // A country the organization has not bought, or a technical code: still what the key says (spec 7).
      for (const country of ['ar', 'es']) {
        const notBought = await scrub({ ...body, country }, { apiKey: o.apiKey, idempotencyKey: k });
        expect([notBought.status, notBought.body.error], country).toEqual([409, 'idempotency_key_reused']);
      }
    });

    it('while the original runs: 409 idempotency_request_in_progress with Retry-After >= 1', async () => {
      await stack.admin(['adapter', 'drill', '--country', 'co', '--latency-ms', '2500']);
      try {
        const k = key();
        const body = { country: 'co', phones: ['3001234567'] };
        const original = scrub(body, { idempotencyKey: k });
        await new Promise((r) => setTimeout(r, 600));
        const retry = await scrub(body, { idempotencyKey: k });
        expect([retry.status, retry.body.error]).toEqual([409, 'idempotency_request_in_progress']);
        expect(Number(retry.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
        expect((await original).status).toBe(200);
      } finally {
        await stack.admin(['adapter', 'drill', '--country', 'co', '--clear']);
      }
    });

    it('parallel identical requests: one execution, one charge', async () => {
      const o = await seedOrg(stack, ['co'], { name: 'Race' });
      const k = key();
      const body = { country: 'co', phones: ['3001234567', '3109999999'] };
      const results = await Promise.all(
        Array.from({ length: 8 }, () => scrub(body, { apiKey: o.apiKey, idempotencyKey: k })),
      );
      const statuses = results.map((r) => r.status);
      expect(statuses.filter((s) => s === 200).length).toBeGreaterThanOrEqual(1);
      for (const r of results) expect([200, 409]).toContain(r.status);
      expect(await quotaUsed(o.orgId, 'co')).toEqual({ used: 2, reserved: 0 });
      expect(await usageCount(o.orgId)).toBe(1);
    });
  });

  describe('limits (429) and availability (503)', () => {
    it('429 rate_limit_exceeded with Retry-After and rate-limit headers past the organization limit', async () => {
      const o = await seedOrg(stack, ['co'], { name: 'Limited' });
      await stack.admin(['org', 'set-rate-limit', '--org', o.orgId, '--limit', '2']);
      const a = await scrub({ country: 'co', phones: [] }, { apiKey: o.apiKey });
      const b = await scrub({ country: 'co', phones: [] }, { apiKey: o.apiKey });
      const c = await scrub({ country: 'co', phones: [] }, { apiKey: o.apiKey });
      expect([a.status, b.status]).toEqual([200, 200]);
      expect(a.headers.get('x-ratelimit-limit')).toBe('2');
      expect(b.headers.get('x-ratelimit-remaining')).toBe('0');
      expect([c.status, c.body.error]).toEqual([429, 'rate_limit_exceeded']);
      expect(Number(c.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      expectRateLimitHeaders(c);
    });

    it('429 customer_quota_exceeded without Retry-After; failures consume nothing', async () => {
      const o = await seedOrg(stack, ['co'], { name: 'Quota', quota: 3 });
      expect((await scrub({ country: 'co', phones: ['1', '2'] }, { apiKey: o.apiKey })).status).toBe(200);
      const over = await scrub({ country: 'co', phones: ['1', '2'] }, { apiKey: o.apiKey });
      expect([over.status, over.body.error]).toEqual([429, 'customer_quota_exceeded']);
      expect(over.headers.get('retry-after')).toBeNull();
      expect((await scrub({ country: 'co', phones: ['1'] }, { apiKey: o.apiKey })).status).toBe(200);
      expect(await quotaUsed(o.orgId, 'co')).toEqual({ used: 3, reserved: 0 });
    });

    it('503 country_service_maintenance with Retry-After = seconds to the end of the window', async () => {
      const until = new Date(Date.now() + 120_000).toISOString();
      await stack.admin(['country', 'maintenance', '--country', 'ar', '--until', until]);
      try {
        const res = await scrub({ country: 'ar', phones: ['+54 11 4123 4567'] });
        expect([res.status, res.body.error]).toEqual([503, 'country_service_maintenance']);
        const retryAfter = Number(res.headers.get('retry-after'));
        expect(retryAfter).toBeGreaterThan(100);
        expect(retryAfter).toBeLessThanOrEqual(120);
      } finally {
        await stack.admin(['country', 'maintenance', '--country', 'ar', '--clear']);
      }
      expect((await scrub({ country: 'ar', phones: [] })).status).toBe(200);
    });

    it('an adapter failing (drill) is 503 country_service_temporarily_unavailable; no partial result, no charge', async () => {
      const o = await seedOrg(stack, ['co'], { name: 'Drill' });
      await stack.admin(['adapter', 'drill', '--country', 'co', '--fail', 'unavailable']);
      try {
        const k = key();
        const res = await scrub(
          { country: 'co', phones: ['3001234567'] },
          { apiKey: o.apiKey, idempotencyKey: k },
        );
        expect([res.status, res.body.error]).toEqual([503, 'country_service_temporarily_unavailable']);
        expect(res.body).not.toHaveProperty('safe_numbers_to_call');
        expect(await quotaUsed(o.orgId, 'co')).toEqual({ used: 0, reserved: 0 });
        await stack.admin(['adapter', 'drill', '--country', 'co', '--clear']);
        // The failed request did not consume its key: the same key succeeds once the adapter is back
        // (clients retry a 503 with the same key; discovery notices the recovery within a second).
        const body = { country: 'co', phones: ['3001234567'] };
        let retry = await scrub(body, { apiKey: o.apiKey, idempotencyKey: k });
        for (let i = 0; i < 20 && retry.status === 503; i++) {
          await new Promise((r) => setTimeout(r, 250));
          retry = await scrub(body, { apiKey: o.apiKey, idempotencyKey: k });
        }
        expect(retry.status, JSON.stringify(retry.body)).toBe(200);
        expect(retry.headers.get('idempotency-replayed')).toBeNull();
      } finally {
        await stack.admin(['adapter', 'drill', '--country', 'co', '--clear']);
      }
    });

    it('an adapter stopped is 503 country_service_temporarily_unavailable; back when it returns', async () => {
      await stack.stop('adapter-mx');
      try {
        let res: ApiResponse | undefined;
        const until = Date.now() + 10_000;
        while (Date.now() < until) {
          res = await scrub({ country: 'mx', phones: ['5512345678'] });
          if (res.status === 503) break;
          await new Promise((r) => setTimeout(r, 300));
        }
        expect([res!.status, res!.body.error]).toEqual([503, 'country_service_temporarily_unavailable']);
      } finally {
        await stack.start('adapter-mx');
      }
      const back = Date.now() + 10_000;
      let status = 0;
      while (Date.now() < back) {
        status = (await scrub({ country: 'mx', phones: ['5512345678'] })).status;
        if (status === 200) break;
        await new Promise((r) => setTimeout(r, 300));
      }
      expect(status).toBe(200);
    });
  });

  it('405 for GET /v1/scrub with Allow: POST and the v1 headers', async () => {
    const res = await call(stack.baseUrl, 'GET', '/v1/scrub', { apiKey: org.apiKey });
    expectV1(res);
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('POST');
  });
});
