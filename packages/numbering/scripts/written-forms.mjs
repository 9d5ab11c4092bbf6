// Seeded generator of the ways people write phone numbers, shared by the differential test
// (test/numbering/differential.unit.test.ts) and the benchmark (bench-numbering.mjs). Plain JavaScript so
// the benchmark runs on the compiled code with plain node. Synthetic inputs only: no real subscriber data.

import { FOREIGN, JUNK, PLANS, SEPARATORS } from './written-forms-tables.mjs';

/** mulberry32: small, fast, reproducible. */
/** @param {number} seed @returns {() => number} */
export function prng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** @template T @param {() => number} r @param {readonly T[]} xs @returns {T} */
const pick = (r, xs) => xs[Math.floor(r() * xs.length)];
/** @param {() => number} r @param {number} n */
const digits = (r, n) => {
  let s = '';
  for (let i = 0; i < n; i++) s += String(Math.floor(r() * 10));
  return s;
};

/** The national digits of a line, either in a real range or random (near-valid, garbage). */
function nationalDigits(r, plan) {
  const roll = r();
  if (roll < 0.7) {
    const lead = pick(r, plan.leads);
    return (
      lead + digits(r, Math.max(0, plan.length - lead.length + (r() < 0.85 ? 0 : pick(r, [-2, -1, 1, 2]))))
    );
  }
  if (roll < 0.9) return digits(r, plan.length + pick(r, [-1, 0, 0, 1]));
  return digits(r, 1 + Math.floor(r() * 18));
}

/** A dialing prefix in front of the national digits: international, trunk, obsolete and carrier forms. */
function dialed(r, country, plan, national) {
  const cc = plan.cc;
  const common = [
    () => national,
    () => national,
    () => `+${cc}${national}`,
    () => `+${cc} ${national}`,
    () => `00${cc}${national}`,
    () => `${cc}${national}`,
    () => `0${national}`,
    () => `+${cc}0${national}`,
    () => `+${cc}${cc}${national}`,
    () => `+0${national}`,
  ];
  const quirks = {
    mx: [
      () => `+52 1 ${national}`,
      () => `521${national}`,
      () => `044${national}`,
      () => `045${national}`,
      () => `01${national}`,
      () => `09${cc}${national}`,
      () => `+52 044 ${national}`,
      () => `1${national}`,
    ],
    ar: [
      () => `+54 9 ${national}`,
      () => `549${national}`,
      () => `9${national}`,
      () => {
        // 0 <area> 15 <subscriber>, with area codes of 2 to 4 digits.
        const cut = pick(r, [2, 3, 4]);
        return `0${national.slice(0, cut)} 15 ${national.slice(cut + 2)}`;
      },
      () => {
        const cut = pick(r, [2, 3, 4]);
        return `${national.slice(0, cut)}15${national.slice(cut + 2)}`;
      },
      () => `+54 9 0${national}`,
      () => `+54 ${national.slice(0, 2)} 15 ${national.slice(4)}`,
      () => `0054 9 ${national}`,
    ],
    co: [
      () => `005 57 ${national}`,
      () => `007${cc}${national}`,
      () => `009 57 ${national}`,
      () => `0057${national}`,
      () => `03${national}`,
      () => `0444${national}`,
      () => `00456${cc}${national}`,
      () => `60${national}`,
    ],
  };
  return pick(r, r() < 0.55 ? common : quirks[country])();
}

const UNICODE_ZERO = [0xff10, 0x0660, 0x06f0];

function spell(r, raw) {
  let out = '';
  const separator = pick(r, SEPARATORS);
  const density = r() * 0.5;
  const unicode = r() < 0.08 ? pick(r, UNICODE_ZERO) : 0;
  let opened = false;
  for (let i = 0; i < raw.length; i++) {
    const ch = raw[i];
    if (i > 0 && r() < density) out += r() < 0.9 ? separator : pick(r, SEPARATORS);
    if (!opened && i > 0 && ch >= '0' && ch <= '9' && r() < 0.03) {
      out += '(';
      opened = true;
    } else if (opened && r() < 0.2) {
      out += ') ';
      opened = false;
    }
    out += unicode && ch >= '0' && ch <= '9' ? String.fromCharCode(unicode + Number(ch)) : ch;
  }
  return out;
}

function decorate(r, s) {
  let out = s;
  const roll = r();
  if (roll < 0.04) out = `tel:${out.replace(/\s/g, '-')}`;
  else if (roll < 0.06) out = `${pick(r, ['Tel: ', 'cel ', 'phone:', 'Móvil ', '( ', '-'])}${out}`;
  const tail = r();
  if (tail < 0.06) {
    out += pick(r, [
      ' ext 12',
      ' ext. 345',
      ' x7',
      'x7',
      ' X 12',
      ' EXT 9',
      ' Ext: 9',
      ' extn 44',
      ' ext-12',
      ', ext 3',
      '\text 3',
      ' int. 23',
      ' INT 4',
      ' interno 12',
      ' Interno: 4',
      ' INTERNO. 345',
      'interno12',
      '\tinterno\t12',
      '\u202finterno\u202f7',
      ', interno - 3',
      ' internos 12',
      ' interno 1234567890',
      ' int erno 5',
      '\u202fext\u202f12',
      '\u3000ext\u300012',
      '\text.\t9',
      ' x 1234567',
      ' ext 123456789012345678901',
      ' ext 12 ',
      ' ext 12 (oficina)',
      ' ext 12 3',
      ' ext',
      ' x',
      ';ext=55',
      ' #12',
      ' - 12#',
      ',,12',
      ' extensión 4',
      ' ｅｘｔ 5',
      ' ext ١٢',
    ]);
  } else if (tail < 0.1)
    out += pick(r, [
      ' ',
      '  ',
      '\u00a0',
      '\n',
      ' .',
      '-',
      ' (mobile)',
      '!',
      '#',
      ';',
      '\t',
      '\u202f',
      '\r\n',
    ]);
  if (r() < 0.02) out = pick(r, ['\t', '\u202f', '\u2009', '\n', '\u3000']) + out;
  if (r() < 0.05) {
    // Random damage: insert, replace or delete one character.
    const at = Math.floor(r() * (out.length + 1));
    const what = r();
    if (what < 0.4) out = out.slice(0, at) + pick(r, JUNK) + out.slice(at);
    else if (what < 0.7) out = out.slice(0, at) + pick(r, JUNK) + out.slice(at + 1);
    else out = out.slice(0, at) + out.slice(at + 1);
  }
  if (r() < 0.01) out = out.slice(0, Math.floor(r() * out.length));
  return out.length > 64 ? out.slice(0, 64) : out;
}

/** One written form for `country`: mostly that country's numbers in every spelling, some foreign and garbage. */
/** @param {() => number} r @param {'mx' | 'ar' | 'co'} country @returns {string} */
export function writtenForm(r, country) {
  const plan = PLANS[country];
  const roll = r();
  if (roll < 0.03) return decorate(r, spell(r, pick(r, FOREIGN)));
  if (roll < 0.05) {
    // Any calling code, known or not, with too few to too many digits after it.
    return decorate(
      r,
      spell(r, `${pick(r, ['+', '00', '009', '005', '09'])}${digits(r, 1 + Math.floor(r() * 22))}`),
    );
  }
  if (roll < 0.06)
    return pick(r, ['', ' ', 'n/a', '-', '+', '0', '00', '+52', 'null', '12', '1 2 3', 'sin número']);
  return decorate(r, spell(r, dialed(r, country, plan, nationalDigits(r, plan))));
}

/**
 * A realistic mix for the benchmark and the fallback rate: what customer lists really hold
 * (E.164, national, with separators; a few obsolete forms, extensions, URIs and junk).
 */
/** @param {() => number} r @param {'mx' | 'ar' | 'co'} country @returns {string} */
export function realisticForm(r, country) {
  const plan = PLANS[country];
  const lead = pick(r, plan.leads.slice(0, 12));
  const national = lead + digits(r, plan.length - lead.length);
  const roll = r();
  let s;
  if (roll < 0.35) s = `+${plan.cc}${country === 'ar' && r() < 0.5 ? '9' : ''}${national}`;
  else if (roll < 0.55) s = national;
  else if (roll < 0.75)
    s = `+${plan.cc} ${national.slice(0, 2)} ${national.slice(2, 6)} ${national.slice(6)}`;
  else if (roll < 0.85) s = `(${national.slice(0, 3)}) ${national.slice(3, 6)}-${national.slice(6)}`;
  else if (roll < 0.9) s = `${plan.cc}${national}`;
  else if (roll < 0.95) s = dialed(r, country, plan, national);
  else if (roll < 0.97) s = `${national} ext ${digits(r, 2)}`;
  else if (roll < 0.98) s = `tel:+${plan.cc}-${national}`;
  else if (roll < 0.985) s = pick(r, FOREIGN);
  else if (roll < 0.99) {
    // Messy cells: two numbers, a spelled-out extension, a note glued to the digits.
    s = pick(r, [
      `${national} / ${national.slice(0, 4)}${digits(r, plan.length - 4)}`,
      `${national} extensión ${digits(r, 3)}`,
      `${national}#${digits(r, 2)}`,
      `${national.slice(0, 5)}o${national.slice(5)}`,
    ]);
  } else s = pick(r, ['', 'n/a', '5', `${national.slice(0, 7)}`]);
  return r() < 0.05 ? `${s} ` : s;
}
