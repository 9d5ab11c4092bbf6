// Issue 4 "Done when": per live country, a table of real-world written forms (registered, unregistered,
// foreign, garbage, every national quirk) answered through Check over gRPC against a loaded registry.
// The registry is loaded with ONE spelling of each registered line; every other spelling must be found.
// Synthetic numbers in real ranges only.
import { registryv1 } from '@dnc/proto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningAdapter } from '../src/index.js';
import { adapterClients, isolatedEnv, loadLines, startTestAdapter } from './support/adapter.js';

const { Outcome } = registryv1;
const P = Outcome.PROHIBITED;
const S = Outcome.SAFE;
const UNPARSEABLE = Outcome.INVALID_UNPARSEABLE;
const LENGTH = Outcome.INVALID_LENGTH;
const WRONG = Outcome.INVALID_WRONG_COUNTRY;
/** Any invalid reason is acceptable; what matters is that it is not SAFE or PROHIBITED. */
const INVALID = -1;

type Row = readonly [input: string, expected: registryv1.Outcome | typeof INVALID];

const FW = (s: string) => s.replace(/[0-9]/g, (d) => String.fromCharCode(0xff10 + Number(d)));

/** Spellings of a 10-digit national number `n` common to the three countries (cc = calling code). */
function commonForms(cc: string, n: string, idd00: boolean): string[] {
  const a = n.slice(0, 2);
  const b = n.slice(2, 6);
  const c = n.slice(6);
  return [
    n,
    `${a} ${b} ${c}`,
    `${a}-${b}-${c}`,
    `${a}.${b}.${c}`,
    `(${a}) ${b}-${c}`,
    `(${a})${b}${c}`,
    `+${cc}${n}`,
    `+${cc} ${a} ${b} ${c}`,
    `+${cc} (${a}) ${b}-${c}`,
    `+${cc}-${a}-${b}-${c}`,
    `${cc}${n}`,
    `${cc} ${a} ${b} ${c}`,
    `tel:+${cc}-${a}-${b}-${c}`,
    `  ${a} ${b} ${c}  `,
    `${a}\u00a0${b}\u00a0${c}`,
    `${a} ${b} ${c} ext 12`,
    FW(`${a} ${b} ${c}`),
    ...(idd00 ? [`00${cc} ${a} ${b} ${c}`, `00${cc}${n}`] : []),
  ];
}

const GARBAGE: Row[] = [
  ['', UNPARSEABLE],
  ['abc', UNPARSEABLE],
  ['+', UNPARSEABLE],
  ['call me', UNPARSEABLE],
  ['123', INVALID],
  ['1'.repeat(25), INVALID],
  ['+999 1234 5678', INVALID],
  ["1'; DROP TABLE numbers; --", INVALID],
];

interface CountryTable {
  cc: string;
  /** The registry file: one spelling per registered line. */
  load: string[];
  rows: Row[];
}

// Mexico: CDMX line 55 1234 5678 and Monterrey 81 8123 4567 registered; 55 8765 4321 not.
const MX: CountryTable = {
  cc: '52',
  load: ['+52 55 1234 5678', '81 8123 4567'],
  rows: [
    ...commonForms('52', '5512345678', true).map((f): Row => [f, P]),
    ...commonForms('52', '5587654321', true).map((f): Row => [f, S]),
    ['+52 81 8123 4567', P],
    // Abolished forms of a registered line: normalized to the 10-digit line, never safe.
    ['044 55 1234 5678', P],
    ['045 55 1234 5678', P],
    ['+52 1 55 1234 5678', P],
    ['+5215512345678', P],
    ['0052 1 55 1234 5678', P],
    ['01 55 1234 5678', P],
    ['044 55 8765 4321', S],
    ['+52 1 55 8765 4321', S],
    // Too short, too long, foreign.
    ['55 1234 567', LENGTH],
    ['55 1234 56789', INVALID],
    ['+1 212 555 0123', INVALID],
    ['+54 11 4123 4567', WRONG],
    ['+57 300 123 4567', WRONG],
    ['+44 20 7946 0958', WRONG],
    ...GARBAGE,
  ],
};

// Argentina: Buenos Aires line 11 4123 4567 registered as a landline spelling; its mobile spellings
// (+54 9 ..., 0 11 15 ...) are the same line. Córdoba 351 412 3456 registered as a mobile spelling.
const AR: CountryTable = {
  cc: '54',
  load: ['+54 11 4123 4567', '0351 15 412 3456'],
  rows: [
    ...commonForms('54', '1141234567', true).map((f): Row => [f, P]),
    ...commonForms('54', '1149876543', true).map((f): Row => [f, S]),
    ['+54 9 11 4123 4567', P],
    ['+5491141234567', P],
    ['0054 9 11 4123 4567', P],
    ['011 15 4123 4567', P],
    ['011 4123 4567', P],
    ['11 15 4123 4567', P],
    ['+54 351 412 3456', P],
    ['+54 9 351 412 3456', P],
    ['0351 412 3456', P],
    ['(0351) 15-412-3456', P],
    ['+54 9 11 4987 6543', S],
    ['011 15 4987 6543', S],
    ['+54 11 4123 456', INVALID],
    ['+52 55 1234 5678', WRONG],
    ['+57 300 123 4567', WRONG],
    ['+1 212 555 0123', INVALID],
    ...GARBAGE,
  ],
};

// Colombia: mobile 300 123 4567 and Bogotá landline 601 234 5678 registered. `00` is not Colombia's
// international prefix (its IDDs are carrier codes 005/007/009), so 00-spellings are not offered.
const CO: CountryTable = {
  cc: '57',
  load: ['300 123 4567', '+57 601 234 5678'],
  rows: [
    ...commonForms('57', '3001234567', false).map((f): Row => [f, P]),
    ...commonForms('57', '3009876543', false).map((f): Row => [f, S]),
    ...commonForms('57', '6012345678', false).map((f): Row => [f, P]),
    ['601 234 5678', P],
    ['(601) 234-5678', P],
    ['+57 601 987 6543', S],
    ['+57 604 444 5566', S],
    ['005 57 300 123 4567', P],
    ['009 57 300 123 4567', P],
    // Old 7-digit Bogotá landline and the pre-2021 `1` area code: not dialable any more.
    ['234 5678', INVALID],
    ['+57 1 234 5678', INVALID],
    ['300 123 456', INVALID],
    ['+52 55 1234 5678', WRONG],
    ['+54 11 4123 4567', WRONG],
    ['+1 212 555 0123', INVALID],
    ...GARBAGE,
  ],
};

const TABLES: Record<string, CountryTable> = { mx: MX, ar: AR, co: CO };

describe.each(Object.keys(TABLES))('written forms through Check (%s)', (country) => {
  const table = TABLES[country]!;
  const env = isolatedEnv(`forms_${country}`);
  let adapter: RunningAdapter;

  beforeAll(async () => {
    adapter = await startTestAdapter(env, country);
    const res = await loadLines(adapter.address, country, registryv1.LoadMode.REPLACE, table.load);
    expect(res.rejected).toBe(0n);
  });
  afterAll(async () => {
    await adapter?.shutdown();
    await env.drop();
  });

  it(`has at least 60 rows`, () => {
    expect(table.rows.length).toBeGreaterThanOrEqual(60);
  });

  it('answers every row as the table says, in one batch and in input order', async () => {
    const { adapter: client } = adapterClients(adapter.address);
    const inputs = table.rows.map(([input]) => input);
    const { outcomes } = await client.check({ country, phones: inputs });
    const got = table.rows.map(([input, expected], i) => {
      const o = outcomes[i]!;
      const ok = expected === INVALID ? o >= UNPARSEABLE : o === expected;
      return { input, expected: expected === INVALID ? 'INVALID_*' : Outcome[expected], got: Outcome[o], ok };
    });
    expect(got.filter((g) => !g.ok)).toEqual([]);
  });
});
