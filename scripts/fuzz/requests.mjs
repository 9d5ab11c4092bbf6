// Requests generated from the OpenAPI document: every operation with its method, path parameters,
// headers and body drawn from the document's schemas, mostly valid, often one rule away, sometimes
// plain hostile (naughty strings, invalid UTF-8, lone surrogates, duplicated and oversize headers,
// prototype keys, numbers as strings and strings as numbers).
import fc from 'fast-check';
import { deref, invalidArbitrary, NAUGHTY, toJsonText, validArbitrary } from './schema-arbitrary.mjs';

const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'];

/** Every operation of the document: method, path template, parameters and body schema. */
export function operationsOf(doc) {
  const out = [];
  for (const [template, item] of Object.entries(doc.paths)) {
    for (const method of ['get', 'post', 'put', 'patch', 'delete']) {
      const op = item[method];
      if (!op) continue;
      const params = [...(item.parameters ?? []), ...(op.parameters ?? [])].map((p) => deref(p, doc));
      const body = op.requestBody?.content?.['application/json']?.schema;
      out.push({
        operationId: op.operationId,
        method: method.toUpperCase(),
        template,
        params,
        body,
        authenticated: (op.security ?? doc.security ?? []).some((s) => Object.keys(s).length > 0),
      });
    }
  }
  return out;
}

/** Bytes that are not UTF-8, and a lone surrogate encoded the way a careless client would. */
const INVALID_UTF8 = [
  Buffer.from([0xc3, 0x28]),
  Buffer.from([0xed, 0xa0, 0x80]),
  Buffer.from([0xff, 0xfe]),
  Buffer.from([0xf0, 0x28, 0x8c, 0x28]),
];

function bodyArbitrary(schema, doc) {
  const valid = validArbitrary(schema, doc).map(toJsonText);
  const invalid = invalidArbitrary(schema, doc).map(toJsonText);
  const utf8 = fc.tuple(validArbitrary(schema, doc), fc.constantFrom(...INVALID_UTF8)).map(([v, bad]) => {
    const text = toJsonText(v);
    const at = text.indexOf('"', text.indexOf('[')) + 1;
    return at > 0
      ? Buffer.concat([Buffer.from(text.slice(0, at)), bad, Buffer.from(text.slice(at))])
      : Buffer.from(text);
  });
  const broken = fc.oneof(
    valid.chain((t) => fc.nat({ max: Math.max(0, t.length - 1) }).map((n) => t.slice(0, n))),
    fc.constantFrom('', ' ', 'null', '[]', '"co"', '{}', '{"country":"co","phones":"3001234567"}'),
    fc.constantFrom(...NAUGHTY),
    valid.map((t) => `\uFEFF${t}`),
    fc.jsonValue().map((v) => JSON.stringify(v)),
  );
  return fc.oneof(
    { weight: 6, arbitrary: valid },
    { weight: 6, arbitrary: invalid },
    { weight: 1, arbitrary: utf8 },
    { weight: 2, arbitrary: broken },
  );
}

function paramArbitrary(param, doc) {
  const schema = deref(param.schema, doc);
  const valid = validArbitrary(schema, doc);
  if (param.in === 'path' && param.name === 'job_id') {
    // Ids that exist (the caller's, another organization's), ids that do not, ids that are not ids.
    return fc.oneof(
      { weight: 4, arbitrary: fc.nat().map((n) => ({ job: 'own', n })) },
      { weight: 3, arbitrary: fc.nat().map((n) => ({ job: 'foreign', n })) },
      { weight: 3, arbitrary: valid },
      { weight: 1, arbitrary: valid.map((v) => v.toUpperCase()) },
      { weight: 1, arbitrary: fc.constantFrom('..', '%2e%2e', '%00', '%2F', 'null', ' ', '%E9') },
      { weight: 1, arbitrary: fc.string({ minLength: 1, maxLength: 80 }).map(encodeURIComponent) },
    );
  }
  return fc.oneof(
    { weight: 8, arbitrary: valid },
    { weight: 1, arbitrary: fc.constant(undefined) },
    {
      weight: 2,
      arbitrary: fc.oneof(
        fc.constantFrom('', ' ', 'a b', 'é', 'x'.repeat(256), 'key\u0007', '\u00ff'),
        fc.string({ unit: 'binary', maxLength: 40 }),
      ),
    },
    { weight: 1, arbitrary: fc.tuple(valid, valid).map((pair) => pair) },
  );
}

const authArbitrary = fc.oneof(
  { weight: 10, arbitrary: fc.constant({ key: 'own' }) },
  { weight: 1, arbitrary: fc.constant({ key: 'foreign' }) },
  { weight: 1, arbitrary: fc.constant({ key: 'revoked' }) },
  { weight: 1, arbitrary: fc.constant(undefined) },
  {
    weight: 2,
    arbitrary: fc.oneof(
      fc.string({ unit: 'binary-ascii', maxLength: 80 }).map((s) => `Bearer ${s}`),
      fc.constantFrom('Bearer', 'Bearer ', 'Basic dXNlcjpwYXNz', 'bearer dnc_x', `Bearer ${'k'.repeat(600)}`),
    ),
  },
);

const contentTypeArbitrary = fc.oneof(
  { weight: 12, arbitrary: fc.constant('application/json') },
  {
    weight: 2,
    arbitrary: fc.constantFrom(
      'application/json; charset=utf-8',
      'application/json; charset=latin1',
      'text/plain',
      'text/csv',
      'application/x-www-form-urlencoded',
      'multipart/form-data; boundary=x',
      'application/jsonx',
      undefined,
    ),
  },
);

const extraHeaderArbitrary = fc.oneof(
  { weight: 8, arbitrary: fc.constant([]) },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      [['x-forwarded-for', '1.2.3.4']],
      [['content-encoding', 'gzip']],
      [['transfer-encoding', 'chunked']],
      [['x-oversize', 'v'.repeat(20_000)]],
      [['expect', '100-continue']],
      [['authorization', 'Bearer second']],
    ),
  },
);

/** One request description for an operation; ids and keys are symbolic until `resolve`. */
export function requestArbitrary(op, doc) {
  const params = Object.fromEntries(op.params.map((p) => [`${p.in}:${p.name}`, paramArbitrary(p, doc)]));
  return fc.record({
    method: fc.oneof({ weight: 12, arbitrary: fc.constant(op.method) }, fc.constantFrom(...METHODS)),
    params: fc.record(params),
    auth: op.authenticated ? authArbitrary : fc.option(authArbitrary, { freq: 4 }),
    contentType: contentTypeArbitrary,
    extraHeaders: extraHeaderArbitrary,
    query: fc.option(fc.constantFrom('?a=1', '?country=co', '?__proto__[x]=1', '?'), { freq: 8 }),
    body: op.body ? fc.option(bodyArbitrary(op.body, doc), { freq: 12 }) : fc.constant(null),
  });
}

/** A generated description made concrete against the run's keys and jobs. */
export function resolve(op, desc, ctx) {
  let path = op.template;
  const headers = [];
  for (const p of op.params) {
    const value = desc.params[`${p.in}:${p.name}`];
    if (p.in === 'path') {
      let id = value;
      if (value && typeof value === 'object' && 'job' in value) {
        const pool = value.job === 'own' ? ctx.ownJobs : ctx.foreignJobs;
        id = pool.length > 0 ? pool[value.n % pool.length] : '00000000-0000-4000-8000-000000000000';
      }
      path = path.replace(`{${p.name}}`, id);
    } else if (p.in === 'header' && value !== undefined) {
      for (const v of Array.isArray(value) ? value : [value]) headers.push([p.name, v]);
    }
  }
  if (desc.auth) {
    const key = desc.auth.key ? ctx.keys[desc.auth.key] : undefined;
    headers.push(['authorization', key ? `Bearer ${key}` : desc.auth]);
  }
  const body = desc.body === null || desc.body === undefined ? undefined : Buffer.from(desc.body);
  if (body && desc.contentType) headers.push(['content-type', desc.contentType]);
  headers.push(...desc.extraHeaders);
  return { method: desc.method, path: `${path}${desc.query ?? ''}`, route: path, headers, body };
}
