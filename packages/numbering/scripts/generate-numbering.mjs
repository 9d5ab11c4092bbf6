#!/usr/bin/env node
// Generates src/generated/<cc>.ts from the libphonenumber-js `max` metadata, so the fast
// path validates against exactly the data the reference classifier uses.
//
//   node packages/numbering/scripts/generate-numbering.mjs           write the tables
//   node packages/numbering/scripts/generate-numbering.mjs --check   fail if they are stale
//
// What is generated per country:
// - one minimal DFA over the digits 0-9 that accepts, with a bit per pattern, the country's national
//   number pattern (bit 0) and every number type pattern (bit 1 + libphonenumber type index);
// - the IDD prefix pattern and the national prefix for parsing, both finite languages, enumerated
//   in the order a backtracking regular expression engine tries them (so "first entry that is a
//   prefix of the input" is exactly what `RegExp.exec` with `^` returns), with the capture group.
// And once, generated/calling-codes.ts: every calling code and the most digits a national prefix
// transform rule adds (the fast path's foreign-number shortcut relies on both).
// The generator understands only the regular-expression subset found in the metadata (digits,
// \d, classes, groups, alternation, ?, *, +, {n}, {n,m}); anything else stops it with an error.
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Metadata } from 'libphonenumber-js/max';
import { buildDfa, enumerate, parseRegex } from './regex-dfa.mjs';

const require = createRequire(import.meta.url);
const libVersion = require('libphonenumber-js/package.json').version;

const COUNTRIES = ['MX', 'AR', 'CO'];
// libphonenumber-js getType() index order; bit (1 + index) in the DFA accept mask.
const TYPES = [
  'FIXED_LINE',
  'MOBILE',
  'TOLL_FREE',
  'PREMIUM_RATE',
  'PERSONAL_NUMBER',
  'VOICEMAIL',
  'UAN',
  'PAGER',
  'VOIP',
  'SHARED_COST',
];
const MAX_NSN = 17;

const here = dirname(fileURLToPath(import.meta.url));
const outDir = resolve(here, '../src/generated');

// ---------------------------------------------------------------- per country

function countryTables(country) {
  const metadata = new Metadata();
  metadata.selectNumberingPlan(country);
  const plan = metadata.numberingPlan;
  const callingCode = plan.callingCode();
  if (metadata.countryCallingCodes()[callingCode].length !== 1)
    throw new Error(`${country}: calling code ${callingCode} is shared; the fast path assumes it is not`);
  for (let i = 1; i < callingCode.length; i++)
    if (metadata.hasCallingCode(callingCode.slice(0, i)))
      throw new Error(`${country}: a prefix of ${callingCode} is itself a calling code`);
  const possibleLengths = plan.possibleLengths();
  const patterns = [{ bit: 1, source: plan.nationalNumberPattern() }];
  const lengthMaskByType = [];
  TYPES.forEach((type, index) => {
    const t = metadata.type(type);
    if (!t?.pattern()) return;
    patterns.push({ bit: 1 << (1 + index), source: t.pattern() });
    lengthMaskByType.push([1 << (1 + index), t.possibleLengths()]);
  });
  // typeBitsByLength[len]: the type bits whose possible lengths include len (getNumberType's check).
  const typeBitsByLength = [];
  for (let len = 0; len <= MAX_NSN; len++)
    typeBitsByLength.push(lengthMaskByType.reduce((m, [bit, ls]) => (ls.includes(len) ? m | bit : m), 0));
  const dfa = buildDfa(patterns);
  // Keys are national numbers read as integers: a valid number starting with 0 would lose digits.
  const z = dfa.trans[0];
  if (z !== -1 && reachableAccepts(dfa, z).some((a) => a & 1 && a & ~1))
    throw new Error(`${country}: a valid national number may start with 0; integer keys would collide`);

  const idd = enumerate(parseRegex(plan.IDDPrefix()).ast).map((x) => x.s);
  const npfpSource = plan.nationalPrefixForParsing();
  let nationalPrefixes = [];
  let transform = null;
  if (npfpSource) {
    const { ast, groupCount } = parseRegex(npfpSource);
    const rule = plan.nationalPrefixTransformRule();
    if (rule) {
      const m = /^(\d*)\$1(\d*)$/.exec(rule);
      if (!m) throw new Error(`${country}: unsupported transform rule ${rule}`);
      transform = { before: m[1], after: m[2] };
    }
    // libphonenumber-js reads the LAST capture group to decide whether one matched, and group 1 as $1.
    if (groupCount > 1 && rule) throw new Error(`${country}: more than one capture group with a transform`);
    // Entry "digits" or "digits/group1": the group is kept only when the last capture group matched
    // a non-empty string, which is when libphonenumber-js applies the transform rule.
    nationalPrefixes = enumerate(ast).map((x) => {
      const last = groupCount > 0 ? x.groups.get(groupCount) : undefined;
      return last ? `${x.s}/${x.groups.get(1)}` : x.s;
    });
  }
  return {
    country,
    callingCode,
    possibleLengths,
    typeBitsByLength,
    idd,
    nationalPrefixes,
    transform,
    dfa,
  };
}

function reachableAccepts(dfa, from) {
  const seen = new Set([from]);
  const stack = [from];
  const out = [];
  while (stack.length) {
    const s = stack.pop();
    out.push(dfa.accept[s]);
    for (let d = 0; d <= 9; d++) {
      const t = dfa.trans[s * 10 + d];
      if (t >= 0 && !seen.has(t)) {
        seen.add(t);
        stack.push(t);
      }
    }
  }
  return out;
}

// ---------------------------------------------------------------- emit

function chunks(text, size) {
  const out = [];
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size));
  return out.length ? out : [''];
}

function stringList(name, values, size = 96) {
  const text = values.join(' ');
  const parts = chunks(text, size);
  if (parts.length === 1) return `  ${name}: ${JSON.stringify(text)},\n`;
  return `  ${name}: [\n${parts.map((p) => `    ${JSON.stringify(p)},\n`).join('')}  ].join(''),\n`;
}

function emit(t) {
  const trans = Buffer.from(new Int32Array(t.dfa.trans).buffer).toString('base64');
  const accept = Buffer.from(new Uint16Array(t.dfa.accept).buffer).toString('base64');
  const cc = t.country.toLowerCase();
  let out = '';
  out += `// Generated by packages/numbering/scripts/generate-numbering.mjs from libphonenumber-js ${libVersion}\n`;
  out += '// metadata.max.json. Do not edit: run `npm run generate:numbering`.\n';
  out += "import type { CountryTables } from '../tables.js';\n\n";
  out += `export const ${cc}: CountryTables = {\n`;
  out += `  country: '${cc}',\n`;
  out += `  libphonenumberVersion: '${libVersion}',\n`;
  out += `  callingCode: '${t.callingCode}',\n`;
  out += `  possibleLengths: [${t.possibleLengths.join(', ')}],\n`;
  out += `  typeBitsByLength: [${t.typeBitsByLength.join(', ')}],\n`;
  out += stringList('iddPrefixes', t.idd);
  out += stringList('nationalPrefixes', t.nationalPrefixes);
  out += t.transform
    ? `  transform: { before: '${t.transform.before}', after: '${t.transform.after}' },\n`
    : '  transform: null,\n';
  out += `  dfaStates: ${t.dfa.states},\n`;
  out += stringList('dfaTransitions', [trans]);
  out += stringList('dfaAccept', [accept]);
  out += '};\n';
  return out;
}

// Formats through stdin so --check compares with exactly what a write would produce, without temp files.
function biomeFormat(name, text) {
  const root = resolve(here, '../../..');
  return execFileSync(
    join(root, 'node_modules/.bin/biome'),
    ['format', `--stdin-file-path=${join(outDir, name)}`],
    { cwd: root, input: text, encoding: 'utf8', stdio: ['pipe', 'pipe', 'pipe'] },
  );
}

// Every calling code, and a bound on how much a national prefix transform rule can lengthen a
// national number, so the fast path can tell a foreign number (`wrong_country`) without its plan.
function callingCodes() {
  const metadata = new Metadata();
  const codes = [];
  for (let length = 1; length <= 3; length++)
    for (let value = length === 1 ? 1 : 10 ** (length - 1); value < 10 ** length; value++)
      if (metadata.hasCallingCode(String(value))) codes.push(String(value));
  let growth = 0;
  for (const code of codes) {
    for (const country of [code, ...(metadata.countryCallingCodes()[code] ?? [])]) {
      const plan = new Metadata();
      plan.selectNumberingPlan(country);
      const lengths = plan.numberingPlan.possibleLengths();
      // parse() then never throws TOO_SHORT for a stripped national number (see fast.ts).
      if (!lengths || lengths[0] < 2) throw new Error(`${country}: possible lengths ${lengths}`);
      const rule = plan.numberingPlan.nationalPrefixTransformRule();
      if (rule) {
        const groups = rule.match(/\$\d/g) ?? [];
        if (new Set(groups).size !== groups.length) throw new Error(`${country}: transform rule ${rule}`);
        growth = Math.max(growth, rule.replace(/\$\d/g, '').length);
      }
    }
  }
  let out = '';
  out += `// Generated by packages/numbering/scripts/generate-numbering.mjs from libphonenumber-js ${libVersion}\n`;
  out += '// metadata.max.json. Do not edit: run `npm run generate:numbering`.\n\n';
  out += '/** Every calling code libphonenumber-js knows (space separated). */\n';
  out += stringList('export const CALLING_CODES =', codes)
    .replace(/^ {2}/, '')
    .replace(/,\n$/, ';\n')
    .replace(': ', ' ');
  out += '/** The most digits a national prefix transform rule adds to a national number. */\n';
  out += `export const MAX_TRANSFORM_GROWTH = ${growth};\n`;
  return out;
}

const check = process.argv.includes('--check');
const generated = COUNTRIES.map((c) => ({ name: `${c.toLowerCase()}.ts`, text: emit(countryTables(c)) }));
generated.push({ name: 'calling-codes.ts', text: callingCodes() });
const formatted = generated.map((g) => ({ name: g.name, text: biomeFormat(g.name, g.text) }));
if (check) {
  const stale = formatted.filter((g) => {
    try {
      return readFileSync(join(outDir, g.name), 'utf8') !== g.text;
    } catch {
      return true;
    }
  });
  if (stale.length) {
    console.error(
      `numbering tables are stale (${stale.map((g) => g.name).join(', ')}); run npm run generate:numbering`,
    );
    process.exitCode = 1;
  } else console.log(`numbering tables up to date (libphonenumber-js ${libVersion})`);
} else {
  for (const g of formatted) {
    writeFileSync(join(outDir, g.name), g.text);
    console.log(`wrote src/generated/${g.name}`);
  }
}
