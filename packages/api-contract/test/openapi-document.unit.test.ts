import { readFileSync } from 'node:fs';
import { Ajv as AjvDraft07 } from 'ajv';
import { describe, expect, it } from 'vitest';
import {
  buildOpenApiDocument,
  COUNTRY_CODES,
  DurableScrubRequest,
  ERROR_CODE_NAMES,
  ERROR_CODES,
  INVALID_REASONS,
  LIMITS,
  RATE_LIMIT_HEADER_NAMES,
  ROUTES,
  SCHEMAS,
  ScrubRequest,
} from '../src/index.js';

const doc = buildOpenApiDocument();
// biome-ignore lint/suspicious/noExplicitAny: the test walks the untyped document object.
type Obj = Record<string, any>;
const op = (path: string, method: string) => (doc.paths[path] as Obj)[method] as Obj;

const OPERATIONS: [string, string, string[]][] = [
  ['/v1/health', 'get', ['200', '405']],
  ['/v1/ready', 'get', ['200', '503', '405']],
  ['/v1/scrub', 'post', ['200', '400', '401', '402', '403', '405', '409', '413', '429', '500', '503']],
  ['/v2/scrub', 'post', ['200', '202', '400', '401', '402', '403', '405', '409', '413', '429', '500', '503']],
  ['/v2/scrub/{job_id}', 'get', ['200', '401', '404', '405', '429', '500', '503']],
  ['/v2/scrub/{job_id}/result', 'get', ['200', '401', '404', '405', '409', '410', '429', '500', '503']],
  ['/v2/scrub/{job_id}/cancel', 'post', ['200', '202', '401', '404', '405', '413', '429', '500', '503']],
];

describe('OpenAPI document (spec: Versioning 1 - OpenAPI 3.1, version 2.1.0)', () => {
  it('is OpenAPI 3.1.0, version 2.1.0, and the committed openapi.json is what the builder produces', () => {
    expect(doc.openapi).toBe('3.1.0');
    expect(doc.info.version).toBe('2.1.0');
    const committed = JSON.parse(readFileSync(new URL('../openapi.json', import.meta.url), 'utf8'));
    expect(committed).toEqual(JSON.parse(JSON.stringify(doc)));
  });

  it('has exactly the documented operations with every documented status', () => {
    expect(Object.keys(doc.paths).sort()).toEqual(OPERATIONS.map(([path]) => path).sort());
    for (const [path, method, statuses] of OPERATIONS) {
      expect(Object.keys(op(path, method)['responses']).sort(), `${method} ${path}`).toEqual(
        [...statuses].sort(),
      );
    }
  });

  it('documents every public error code on a response of its own status', () => {
    const seen = new Set<string>();
    for (const [path, method] of OPERATIONS) {
      for (const [status, response] of Object.entries(op(path, method)['responses'] as Obj)) {
        for (const code of (response['x-error-codes'] ?? []) as string[]) {
          expect(ERROR_CODES[code as keyof typeof ERROR_CODES].status, code).toBe(Number(status));
          seen.add(code);
        }
      }
    }
    // not_found is the unknown-route answer, documented in info.description (no path to hang it on).
    expect([...seen, 'not_found'].sort()).toEqual([...ERROR_CODE_NAMES].sort());
    expect(doc.info['description']).toContain('"error": "not_found"');
  });

  it('puts Bearer security on every scrub operation and none on health/ready', () => {
    expect(doc['security']).toEqual([{ bearerAuth: [] }]);
    expect(op('/v1/health', 'get')['security']).toEqual([]);
    expect(op('/v1/ready', 'get')['security']).toEqual([]);
    for (const [path, method] of OPERATIONS.slice(2)) expect(op(path, method)['security']).toBeUndefined();
  });

  it('documents retention and cache headers on every response, rate-limit headers except on 401', () => {
    for (const [path, method] of OPERATIONS) {
      const v1 = path.startsWith('/v1/');
      for (const [status, response] of Object.entries(op(path, method)['responses'] as Obj)) {
        const headers = response['headers'] as Obj;
        expect(headers['x-retention'].schema.enum, `${path} ${status}`).toEqual([
          v1 ? 'zero' : 'transient-encrypted',
        ]);
        expect(headers['Cache-Control'].schema.enum).toEqual([v1 ? 'no-store, max-age=0' : 'no-store']);
        const authenticated = path.includes('scrub');
        for (const name of RATE_LIMIT_HEADER_NAMES) {
          if (!authenticated || status === '401' || status === '405') expect(headers[name]).toBeUndefined();
          else expect(headers[name], `${path} ${status} ${name}`).toBeDefined();
        }
        if (status === '401') expect(response['x-absent-headers']).toEqual(RATE_LIMIT_HEADER_NAMES);
        if (status === '405') expect(headers['Allow'].required).toBe(true);
        if (status.startsWith('2') && authenticated) expect(headers['X-RateLimit-Limit'].required).toBe(true);
      }
    }
  });

  it('requires a valid Idempotency-Key on both scrub operations', () => {
    const param = (doc.components['parameters'] as Obj)['IdempotencyKey'];
    expect(param).toMatchObject({ name: 'Idempotency-Key', in: 'header', required: true });
    const re = new RegExp(param.schema.pattern);
    expect(re.test('a')).toBe(true);
    expect(re.test('x'.repeat(255))).toBe(true);
    expect(re.test('x'.repeat(256))).toBe(false);
    expect(re.test('has space')).toBe(false);
    expect(re.test('')).toBe(false);
    expect(re.test('ñ')).toBe(false);
    for (const path of ['/v1/scrub', '/v2/scrub']) {
      expect(op(path, 'post')['parameters']).toEqual([{ $ref: '#/components/parameters/IdempotencyKey' }]);
    }
  });

  it('says what safe does not mean (spec item 4)', () => {
    const text = JSON.stringify(doc);
    for (const word of ['consent', 'reachability', 'calling hours']) expect(text).toContain(word);
  });

  it('uses the component names of the issue and never the retired field names', () => {
    for (const name of [
      'ScrubRequest',
      'DurableScrubRequest',
      'ScrubResult',
      'ScrubJobAccepted',
      'ScrubJobStatus',
      'JobError',
      'Error',
      'Health',
    ]) {
      expect(doc.components.schemas[name], name).toBeDefined();
    }
    const result = JSON.stringify(doc.components.schemas['ScrubResult']);
    for (const gone of ['"matched"', '"clean"', '"invalid"', '"stats"']) expect(result).not.toContain(gone);
    expect((doc.components.schemas['InvalidNumber'] as Obj)['properties'].reason.enum).toEqual(
      INVALID_REASONS,
    );
  });
});

describe('JSON Schemas work in draft-07 (the gateway’s fastify/ajv default)', () => {
  const ajv = new AjvDraft07({ strict: true, allErrors: true, strictTypes: false });
  ajv.addFormat('uuid', true).addFormat('date-time', true).addFormat('uri', true);

  it('compiles every schema in strict mode', () => {
    for (const [name, schema] of Object.entries(SCHEMAS))
      expect(() => ajv.compile(schema), name).not.toThrow();
  });

  it('enforces the v1 and v2 limits and the country list', () => {
    const v1 = ajv.compile(ScrubRequest);
    const v2 = ajv.compile(DurableScrubRequest);
    const phones = (n: number) => Array.from({ length: n }, () => '3001234567');
    expect(v1({ country: 'co', phones: phones(LIMITS.v1MaxInputs) })).toBe(true);
    expect(v1({ country: 'co', phones: phones(LIMITS.v1MaxInputs + 1) })).toBe(false);
    expect(v2({ country: 'co', phones: phones(LIMITS.v1MaxInputs + 1) })).toBe(true);
    expect(v2({ country: 'co', phones: phones(LIMITS.v2MaxInputs + 1) })).toBe(false);
    expect(v1({ country: 'co', phones: ['1'.repeat(64)] })).toBe(true);
    expect(v1({ country: 'co', phones: ['1'.repeat(65)] })).toBe(false);
    for (const country of COUNTRY_CODES) expect(v1({ country, phones: [] })).toBe(true);
    expect(v1({ country: 'us', phones: [] })).toBe(false);
    expect(v1({ country: 'co', phones: [5512345678] })).toBe(false);
    expect(v1({ country: 'co', phones: 'a,b' })).toBe(false);
    expect(v1({ country: 'co', phones: [], extra: 1 })).toBe(false);
    expect(v1({ phones: [] })).toBe(false);
  });
});

describe('ROUTES (fastify schemas) agree with the document', () => {
  const ajv = new AjvDraft07({ strict: true, allErrors: true, strictTypes: false });
  ajv.addFormat('uuid', true).addFormat('date-time', true).addFormat('uri', true);

  it('has one route per operation with the same statuses, and every documented example validates', () => {
    expect(ROUTES.map((r) => `${r.method} ${r.path}`).sort()).toEqual(
      OPERATIONS.map(([p, m]) => `${m.toUpperCase()} ${p}`).sort(),
    );
    for (const route of ROUTES) {
      const operation = op(route.path, route.method.toLowerCase());
      expect(operation['operationId']).toBe(route.operationId);
      expect(Object.keys(route.schema.response).sort()).toEqual(Object.keys(operation['responses']).sort());
      for (const [status, response] of Object.entries(operation['responses'] as Obj)) {
        const validate = ajv.compile(route.schema.response[Number(status)] as object);
        const examples = Object.values((response['content']['application/json'].examples ?? {}) as Obj);
        expect(examples.length, `${route.operationId} ${status}`).toBeGreaterThan(0);
        for (const example of examples)
          expect(validate(example.value), `${route.operationId} ${status}`).toBe(true);
        // A code of another status does not pass this status's schema.
        if (Number(status) >= 400 && status !== '503') {
          expect(validate({ error: 'platform_failure' }), `${route.operationId} ${status}`).toBe(false);
        }
      }
    }
  });

  // Spec, ScrubResult: "total_checked counts every submitted element": read together, the request, job and
  // result examples are one job's.
  it('tells one story in its examples: the request, its job and its result agree on the count', () => {
    const examples = (path: string, method: string, status: string): Obj[] =>
      Object.values(op(path, method)['responses'][status]['content']['application/json'].examples as Obj).map(
        (e) => e.value as Obj,
      );
    const requests = [op('/v1/scrub', 'post'), op('/v2/scrub', 'post')].flatMap((o) =>
      Object.entries(o['requestBody']['content']['application/json'].examples as Obj),
    );
    const inputs = new Set(requests.map(([, e]) => (e.value.phones as string[]).length));
    expect(inputs.size).toBe(1);
    const [count] = inputs;
    for (const [name, e] of requests) expect(e.summary as string, name).toMatch(/^Four inputs/);
    const jobs = [
      ...examples('/v2/scrub', 'post', '202'),
      ...examples('/v2/scrub', 'post', '200'),
      ...examples('/v2/scrub/{job_id}', 'get', '200'),
    ];
    expect(jobs.length).toBeGreaterThan(2);
    for (const job of jobs) expect(job['submitted_count'], job['status']).toBe(count);
    for (const result of [
      ...examples('/v1/scrub', 'post', '200'),
      ...examples('/v2/scrub/{job_id}/result', 'get', '200'),
    ])
      expect(result['summary'].total_checked).toBe(count);
  });

  it('requires the Idempotency-Key header on both scrub routes', () => {
    for (const route of ROUTES.filter(
      (r) => r.operationId === 'scrub' || r.operationId === 'createScrubJob',
    )) {
      const validate = ajv.compile(route.schema.headers as object);
      expect(validate({ 'idempotency-key': 'abc-123' })).toBe(true);
      expect(validate({})).toBe(false);
      expect(validate({ 'idempotency-key': 'a b' })).toBe(false);
      expect(validate({ 'idempotency-key': 'k'.repeat(256) })).toBe(false);
    }
  });
});
