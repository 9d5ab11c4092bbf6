// Hand-written hostile requests the generator would rarely reach: 25 MiB bodies of every shape,
// deep JSON, prototype keys, duplicated and oversize headers, bytes that are not UTF-8. Each names
// the status the spec gives it (`expect`), besides the oracle every response goes through.
import { randomUUID } from 'node:crypto';
import { LIMITS } from '@dnc/api-contract';

const MAX = LIMITS.maxBodyBytes;
const PHONE = '+57 300 123 4567';

/** A valid body padded with JSON whitespace to exactly `size` bytes. */
function padded(country, phones, size) {
  const core = JSON.stringify({ country, phones });
  return Buffer.concat([
    Buffer.from(core.slice(0, -1)),
    Buffer.alloc(size - core.length, 0x20),
    Buffer.from('}'),
  ]);
}

function repeated(prefix, unit, suffix, size) {
  const n = Math.floor((size - prefix.length - suffix.length) / unit.length);
  return Buffer.from(prefix + unit.repeat(n) + suffix);
}

function deep(depth) {
  return Buffer.from(`{"country":"co","phones":${'['.repeat(depth)}${']'.repeat(depth)}}`);
}

/** [name, build(ctx) -> request, expected statuses]. Paths without a body are GET-free on purpose. */
export function hostileRequests(ctx) {
  const scrub = (route, body, extra = []) => ({
    method: 'POST',
    path: route,
    route,
    headers: [
      ['authorization', `Bearer ${ctx.keys.own}`],
      ['idempotency-key', randomUUID()],
      ['content-type', 'application/json'],
      ...extra,
    ],
    body,
  });
  const both = (name, body, v1, v2, extra) => [
    [`v1 ${name}`, () => scrub('/v1/scrub', body(), extra), v1],
    [`v2 ${name}`, () => scrub('/v2/scrub', body(), extra), v2],
  ];
  return [
    ...both(
      '25 MiB body at the limit (whitespace-padded)',
      () => padded('co', [PHONE, '3001234567'], MAX),
      [200],
      [202],
    ),
    ...both('25 MiB + 1 byte', () => padded('co', [PHONE], MAX + 1), [413], [413]),
    ...both(
      '25 MiB one string',
      () => repeated('{"country":"co","phones":["', '7', '"]}', MAX),
      [400],
      [400],
    ),
    ...both(
      '25 MiB of numbers',
      () => repeated('{"country":"co","phones":[', '1,', '1]}', MAX),
      [400, 413],
      [400, 413],
    ),
    ...both(
      '25 MiB of short phones',
      () => repeated('{"country":"co","phones":[', '"3001234567",', '"1"]}', MAX),
      [413],
      [413],
    ),
    ...both(
      '25 MiB of empty strings',
      () => repeated('{"country":"co","phones":[', '"",', '""]}', MAX),
      [413],
      [413],
    ),
    ...both(
      '25 MiB of objects',
      () => repeated('{"country":"co","phones":[', '{},', '{}]}', MAX),
      [400, 413],
      [400, 413],
    ),
    ...both(
      '25 MiB of keys',
      () => repeated('{"country":"co",', '"k":1,', '"phones":[]}', MAX),
      [400],
      [400],
    ),
    ...both('deep JSON 10,000', () => deep(10_000), [400], [400]),
    ...both('deep JSON 1,000,000', () => deep(1_000_000), [400], [400]),
    ...both(
      '__proto__ key',
      () => Buffer.from(`{"country":"co","phones":["3001234567"],"__proto__":{"admin":true}}`),
      [400],
      [400],
    ),
    ...both(
      'constructor key',
      () => Buffer.from(`{"country":"co","phones":[],"constructor":{"prototype":{}}}`),
      [400],
      [400],
    ),
    ...both(
      'duplicated country',
      () => Buffer.from(`{"country":"es","phones":["3001234567"],"country":"co"}`),
      [200, 400],
      [202, 400],
    ),
    ...both(
      'phones as string',
      () => Buffer.from(`{"country":"co","phones":"3001234567,3001234568"}`),
      [400],
      [400],
    ),
    ...both('phone as number', () => Buffer.from(`{"country":"co","phones":[3001234567]}`), [400], [400]),
    ...both('country as number', () => Buffer.from(`{"country":57,"phones":["3001234567"]}`), [400], [400]),
    ...both(
      'lone surrogate escape',
      () => Buffer.from(`{"country":"co","phones":["\\ud800","300\\udfff1234567"]}`),
      [200],
      [202],
    ),
    ...both(
      'invalid UTF-8 in a phone',
      () =>
        Buffer.concat([
          Buffer.from('{"country":"co","phones":["300'),
          Buffer.from([0xc3, 0x28, 0xff]),
          Buffer.from('"]}'),
        ]),
      [400],
      [400],
    ),
    ...both(
      '65-character phone',
      () => Buffer.from(JSON.stringify({ country: 'co', phones: ['3'.repeat(65)] })),
      [400, 413],
      [400, 413],
    ),
    [
      'v1 10,001 phones',
      () =>
        scrub(
          '/v1/scrub',
          Buffer.from(JSON.stringify({ country: 'co', phones: Array(10_001).fill('3001234567') })),
        ),
      [413],
    ],
    [
      'v2 500,001 phones',
      () =>
        scrub('/v2/scrub', Buffer.from(JSON.stringify({ country: 'co', phones: Array(500_001).fill('1') }))),
      [413],
    ],
    ...both(
      'two Authorization headers',
      () => Buffer.from('{"country":"co","phones":[]}'),
      [200, 400, 401],
      [202, 400, 401],
      [['authorization', 'Bearer other']],
    ),
    ...both(
      'two Idempotency-Key headers',
      () => Buffer.from('{"country":"co","phones":[]}'),
      [400],
      [400],
      [['idempotency-key', 'second']],
    ),
    ...both(
      'two Content-Type headers',
      () => Buffer.from('{"country":"co","phones":[]}'),
      [200, 400],
      [202, 400],
      [['content-type', 'text/plain']],
    ),
    ...both(
      '20 KiB header',
      () => Buffer.from('{"country":"co","phones":[]}'),
      [400],
      [400],
      [['x-padding', 'p'.repeat(20_000)]],
    ),
    ...both(
      'Idempotency-Key of Latin-1 bytes',
      () => Buffer.from('{"country":"co","phones":[]}'),
      [400],
      [400],
      [['idempotency-key', 'cl\u00e9']],
    ),
    [
      'GET status with a 20 KiB path',
      () => ({
        method: 'GET',
        path: `/v2/scrub/${'a'.repeat(20_000)}`,
        route: `/v2/scrub/${'a'.repeat(20_000)}`,
        headers: [['authorization', `Bearer ${ctx.keys.own}`]],
      }),
      [400, 404, 414],
    ],
    [
      'GET status with a NUL in the id',
      () => ({
        method: 'GET',
        path: '/v2/scrub/%00',
        route: '/v2/scrub/%00',
        headers: [['authorization', `Bearer ${ctx.keys.own}`]],
      }),
      [404],
    ],
    [
      'Authorization of 64 KiB',
      () => ({
        method: 'GET',
        path: `/v2/scrub/${randomUUID()}`,
        route: '/v2/scrub/x',
        headers: [['authorization', `Bearer ${'k'.repeat(65_536)}`]],
      }),
      [400, 401],
    ],
  ];
}
