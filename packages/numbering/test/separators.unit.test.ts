// Unicode spaces between the digit groups and the extension word `interno` (cleanWrittenForm): what
// people paste (a spreadsheet row's tabs, the narrow no-break space of Intl/ICU formatters) reads as
// the same line as the form with ASCII spaces, in every country and in both implementations; the fast
// path reads every character as the reference does.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  cleanWrittenForm,
  createNormalizer,
  createNumbering,
  decideFast,
  NUMBERING_COUNTRIES,
  NUMBERING_RULES,
  type NumberingCountry,
  normalizeReference,
  UNDECIDED,
} from '../src/index.js';

/**
 * Tab and the Unicode space separators (general category Zs), the ASCII space among them, but U+3000,
 * which libphonenumber-js reads as a space inside the number and not around an extension label.
 */
const SPACES = [
  ' ',
  '\t',
  '\u00a0',
  '\u1680',
  ...Array.from({ length: 11 }, (_, i) => String.fromCharCode(0x2000 + i)),
  '\u202f',
  '\u205f',
];
const LINE_BREAKS = ['\n', '\r', '\u000b', '\u000c', '\u0085', '\u2028', '\u2029'];

describe('cleanWrittenForm', () => {
  it('reads tab and every Unicode space separator as an ASCII space, and nothing else', () => {
    const mapped: number[] = [];
    for (let c = 0; c <= 0xffff; c++) {
      const ch = String.fromCharCode(c);
      const cleaned = cleanWrittenForm(`5${ch}5`);
      if (cleaned !== `5${ch}5`) {
        expect(cleaned).toBe('5 5');
        mapped.push(c);
      }
    }
    const expected = SPACES.filter((s) => s !== ' ').map((s) => s.charCodeAt(0));
    expect(mapped).toEqual(expected);
    const unicode = [...Array(0x10000).keys()].filter((c) => /[\t\p{Zs}]/u.test(String.fromCharCode(c)));
    expect(unicode.filter((c) => c !== 0x20 && c !== 0x3000)).toEqual(expected);
  });

  it('leaves U+3000 to libphonenumber-js: a space inside the number, none around an extension label', () => {
    // A tilde is punctuation and an extension label: rewriting U+3000 would make this valid line
    // (rules revision 1) a short number with an extension.
    const numbering = createNumbering('mx', 'fast');
    expect(cleanWrittenForm('55\u30001234 567~\u30008')).toBe('55\u30001234 567~\u30008');
    expect(numbering.normalize('55\u30001234\u30005678')).toBe(5512345678);
    expect(numbering.normalize('55 1234 567~\u30008')).toBe(5512345678);
    expect(numbering.normalize('55 1234 567~ 8')).toBe(-numbering.classify('551234567').outcome);
    expect(numbering.normalize('55 1234 5678 ext\u300012')).toBe(-numbering.classify('').outcome);
  });

  it('leaves line breaks as they are: inside a number they are no separator', () => {
    for (const b of LINE_BREAKS) expect(cleanWrittenForm(`55${b}1234`)).toBe(`55${b}1234`);
  });

  it('reads the whole word interno (any case) as the extension label int', () => {
    expect(cleanWrittenForm('11 4123 4567 interno 12')).toBe('11 4123 4567 int 12');
    expect(cleanWrittenForm('11 4123 4567 Interno: 12')).toBe('11 4123 4567 int: 12');
    expect(cleanWrittenForm('11 4123 4567 INTERNO.12')).toBe('11 4123 4567 int.12');
    expect(cleanWrittenForm('11 4123 4567interno12')).toBe('11 4123 4567int12');
    for (const s of ['internos 12', 'nointerno 12', 'internacional 12', 'intern 12']) {
      expect(cleanWrittenForm(s)).toBe(s);
    }
  });

  it('returns an input with nothing to clean unchanged', () => {
    for (const s of ['+525512345678', '55 1234 5678', '(011) 15 4123-4567 int. 23', '']) {
      expect(cleanWrittenForm(s)).toBe(s);
    }
  });
});

describe('rules revision', () => {
  it('is 4: tabs, Unicode spaces and interno move inputs from invalid to valid (2), a second number after `;` (3) or a comma (4) is unparseable, an Argentine trunk 0 kept whole is read (4)', () => {
    expect(NUMBERING_RULES).toMatch(/^dnc-numbering\/4 libphonenumber-js@\d+\.\d+\.\d+$/);
  });
});

/** A valid line of each country in its usual groups, and the calling code. */
const LINES: Record<NumberingCountry, { cc: string; groups: readonly string[] }> = {
  mx: { cc: '52', groups: ['55', '1234', '5678'] },
  ar: { cc: '54', groups: ['11', '4123', '4567'] },
  co: { cc: '57', groups: ['300', '123', '4567'] },
};

/** Where a character goes: between groups, around the calling code, at both ends, around extension labels. */
function placements(country: NumberingCountry): ((ch: string) => string)[] {
  const { cc, groups } = LINES[country];
  const [a, b, c] = groups;
  return [
    (ch) => `${a}${ch}${b} ${c}`,
    (ch) => `+${cc}${ch}${a} ${b} ${c}`,
    (ch) => `${ch}+${cc} ${a} ${b} ${c}`,
    (ch) => `${a} ${b} ${c}${ch}`,
    (ch) => `${a} ${b} ${c}${ch}ext 12`,
    (ch) => `${a} ${b} ${c} ext${ch}12`,
    (ch) => `${a} ${b} ${c},${ch}int 12`,
    (ch) => `${a} ${b} ${c} interno${ch}12`,
    (ch) => `${a} ${b} ${c} int${ch}erno 12`,
  ];
}

describe.each(NUMBERING_COUNTRIES)('every character of the BMP in a written form (%s)', (country) => {
  it('is read by the fast path as the reference reads it, Unicode spaces as the ASCII space', () => {
    const mismatches: string[] = [];
    for (const place of placements(country)) {
      const spaceFast = decideFast(country, place(' '));
      const spaceReference = normalizeReference(country, place(' '));
      for (let c = 0; c <= 0xffff && mismatches.length < 10; c++) {
        const input = place(String.fromCharCode(c));
        const fast = decideFast(country, input);
        if (SPACES.includes(String.fromCharCode(c))) {
          const reference = normalizeReference(country, input);
          if (fast !== spaceFast || reference !== spaceReference) {
            mismatches.push(`${JSON.stringify(input)}: fast ${fast}, reference ${reference}`);
          }
        } else if (fast !== UNDECIDED && fast !== normalizeReference(country, input)) {
          mismatches.push(`${JSON.stringify(input)}: fast ${fast}, reference differs`);
        }
      }
    }
    expect(mismatches).toEqual([]);
  });
});

/** Written forms of a national line `n` (10 digits) with ASCII spaces. */
const TEMPLATES: Record<NumberingCountry, readonly ((n: string) => string)[]> = {
  mx: [
    (n) => `${n.slice(0, 2)} ${n.slice(2, 6)} ${n.slice(6)}`,
    (n) => `+52 (${n.slice(0, 3)}) ${n.slice(3, 6)}-${n.slice(6)}`,
    (n) => `+52 1 ${n.slice(0, 3)} ${n.slice(3, 6)} ${n.slice(6)} ext 12`,
    (n) => `044 ${n.slice(0, 2)} ${n.slice(2, 6)} ${n.slice(6)}`,
  ],
  ar: [
    (n) => `+54 9 ${n.slice(0, 2)} ${n.slice(2, 6)} ${n.slice(6)}`,
    (n) => `(0${n.slice(0, 3)}) 15 ${n.slice(3, 6)}-${n.slice(6)}`,
    (n) => `+54 ${n.slice(0, 2)} ${n.slice(2, 6)}-${n.slice(6)} interno 12`,
    (n) => `0 ${n.slice(0, 2)} ${n.slice(2, 6)} ${n.slice(6)} Interno: 345`,
  ],
  co: [
    (n) => `+57 ${n.slice(0, 3)} ${n.slice(3, 6)} ${n.slice(6)}`,
    (n) => `(${n.slice(0, 3)}) ${n.slice(3, 6)}-${n.slice(6)} ext 5`,
    (n) => `005 57 ${n.slice(0, 3)} ${n.slice(3, 6)} ${n.slice(6)} interno 5`,
  ],
};
const LEADS: Record<NumberingCountry, readonly string[]> = {
  mx: ['55', '33', '81', '222', '664', '998', '800'],
  ar: ['11', '221', '261', '341', '351', '2944', '3794'],
  co: ['300', '310', '315', '321', '601', '604', '605'],
};

describe.each(NUMBERING_COUNTRIES)('a registered line written with any spaces (%s)', (country) => {
  const implementations = [createNumbering(country, 'reference'), createNumbering(country, 'fast')];
  const line = fc
    .tuple(fc.constantFrom(...LEADS[country]), fc.array(fc.integer({ min: 0, max: 9 }), { minLength: 8 }))
    .map(([lead, rest]) => (lead + rest.join('')).slice(0, 10));
  const template = fc.constantFrom(...TEMPLATES[country]);
  const spaces = fc.array(fc.constantFrom(...SPACES), { minLength: 40, maxLength: 40 });
  const ends = fc.tuple(fc.constantFrom('', ...SPACES), fc.constantFrom('', ...SPACES));

  it('gets the key of the form with ASCII spaces', () => {
    fc.assert(
      fc.property(line, template, spaces, ends, (n, write, chosen, [before, after]) => {
        const plain = write(n);
        const key = implementations[0]!.normalize(plain);
        fc.pre(key > 0);
        let k = 0;
        const written = before + plain.replace(/ /g, () => chosen[k++ % chosen.length]!) + after;
        for (const numbering of implementations) {
          expect(numbering.normalize(written), JSON.stringify(written)).toBe(key);
        }
      }),
      { numRuns: 2000 },
    );
  });
});

describe.each([
  ['es', '612 345 678', '+34 612 345 678'],
  ['au', '0412 345 678', '+61 412 345 678'],
  ['sg', '8123 4567', '+65 8123 4567'],
] as const)('technical country %s', (country, national, international) => {
  const normalizer = createNormalizer(country);

  const named = SPACES.map((s) => [`U+${s.charCodeAt(0).toString(16).padStart(4, '0')}`, s] as const);
  it.each(named)('reads %s as an ASCII space', (_name, space) => {
    for (const form of [national, international, `${international} interno 12`]) {
      const key = normalizer.normalize(form);
      expect(key).toBeGreaterThan(0);
      expect(normalizer.normalize(form.split(' ').join(space))).toBe(key);
      expect(normalizer.normalize(`${space}${form}${space}`)).toBe(key);
    }
  });
});
