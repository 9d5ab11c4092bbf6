// Real-world written forms per country, checked against BOTH implementations. Each row names the
// registry key the line must get (the same for every spelling of one subscriber line, DOMAIN.md
// "The one bug that matters") or the public reason it is invalid (spec: invalid_numbers[].reason).
// Synthetic numbers in real ranges only.
import { reasonOf } from '@dnc/kit';
import { describe, expect, it } from 'vitest';
import { createNumbering, type NumberingCountry, type NumberingImplementation } from '../src/index.js';

type Expected = number | 'unparseable' | 'invalid_length' | 'invalid_number' | 'wrong_country';
type Row = readonly [input: string, expected: Expected, note?: string];

const FW = (s: string) => s.replace(/[0-9]/g, (d) => String.fromCharCode(0xff10 + Number(d)));
const AI = (s: string) => s.replace(/[0-9]/g, (d) => String.fromCharCode(0x0660 + Number(d)));
const EA = (s: string) => s.replace(/[0-9]/g, (d) => String.fromCharCode(0x06f0 + Number(d)));

/**
 * Each form again with tab, narrow no-break space (what Intl/ICU formatters write), thin space and
 * figure space for every ASCII space, and at both ends: every Unicode space reads as an ASCII space.
 */
const SPACES = { tab: '\t', 'U+202F': '\u202f', 'U+2009': '\u2009', 'U+2007': '\u2007' };
const spaced = (rows: readonly Row[]): Row[] =>
  Object.entries(SPACES).flatMap(([name, space]) =>
    rows.flatMap(([input, expected]): Row[] => [
      [input.split(' ').join(space), expected, `spaces as ${name}`],
      [`${space}${input.split(' ').join(space)}${space}`, expected, `${name} at both ends`],
    ]),
  );

const MX: readonly Row[] = [
  // One CDMX line, every way it is written.
  ['5512345678', 5512345678],
  ['55 1234 5678', 5512345678],
  ['55-1234-5678', 5512345678],
  ['55.1234.5678', 5512345678],
  ['(55) 1234-5678', 5512345678],
  ['(55)12345678', 5512345678],
  ['55/1234/5678', 5512345678],
  ['55\u00a01234\u00a05678', 5512345678, 'no-break spaces'],
  ['  55 1234 5678  ', 5512345678, 'surrounding spaces'],
  ['55 1234 5678\n', 5512345678, 'trailing newline'],
  ['+525512345678', 5512345678, 'E.164'],
  ['+52 55 1234 5678', 5512345678],
  ['+52 (55) 1234-5678', 5512345678],
  ['+52-55-1234-5678.', 5512345678],
  ['(+52) 55 1234 5678', 5512345678],
  ['0052 55 1234 5678', 5512345678, 'IDD 00'],
  ['0952 55 1234 5678', 5512345678, 'IDD 09'],
  ['525512345678', 5512345678, 'calling code without +'],
  ['52 55 1234 5678', 5512345678],
  ['tel:+52-55-1234-5678', 5512345678, 'RFC 3966'],
  ['tel:+52-55-1234-5678;ext=12', 5512345678, 'RFC 3966 extension'],
  ['tel:5512345678;phone-context=+52', 5512345678, 'RFC 3966 local number'],
  ['Tel: 55 1234 5678', 5512345678],
  ['55 1234 5678 ext 12', 5512345678, 'extension is not part of the line'],
  ['55 1234 5678 ext. 4', 5512345678],
  ['55-1234-5678 x 99', 5512345678],
  [FW('55 1234 5678'), 5512345678, 'full-width digits'],
  [AI('55 1234 5678'), 5512345678, 'Arabic-Indic digits'],
  [EA('5512345678'), 5512345678, 'Eastern Arabic-Indic digits'],
  ['\uff0b52 55 1234 5678', 5512345678, 'full-width plus: read as 52 without +'],
  ['55 1234\t5678', 5512345678, 'tab (spreadsheet paste)'],
  ['+52\t(55)\u202f1234-5678', 5512345678, 'tab, narrow no-break space, parentheses and a dash'],
  ['\u3000+52\u00a055\u20091234\u20075678\t', 5512345678, 'mixed spaces'],
  ['55\u30001234\u3000\u202f5678', 5512345678, 'ideographic space (libphonenumber-js)'],
  ['55 1234 5678\u202fext\u202f12', 5512345678, 'narrow no-break spaces around the extension label'],
  ['\r\n55 1234 5678\r\n', 5512345678, 'line breaks at both ends are skipped'],
  ['\u202855 1234 5678\u2029', 5512345678],
  ...spaced([
    ['55 1234 5678', 5512345678],
    ['+52 (55) 1234-5678', 5512345678],
    ['+52 1 55 1234 5678 ext 12', 5512345678],
    ['044 55 1234 5678', 5512345678],
  ]),
  // Abolished forms of the same line: normalized to the 10-digit number (reference.ts, mexicanObsoleteLine).
  ['+52 1 55 1234 5678', 5512345678, 'international mobile marker 1'],
  ['+5215512345678', 5512345678],
  ['5215512345678', 5512345678, 'WhatsApp-style 521'],
  ['52 1 55 1234 5678', 5512345678],
  ['0052 1 55 1234 5678', 5512345678],
  ['+52 (1) 55 1234 5678', 5512345678],
  ['044 55 1234 5678', 5512345678, 'domestic mobile prefix 044'],
  ['045 55 1234 5678', 5512345678, 'domestic mobile prefix 045'],
  ['0445512345678', 5512345678],
  ['+52 045 55 1234 5678', 5512345678],
  ['01 55 1234 5678', 5512345678, 'long-distance prefix 01'],
  ['1 55 1234 5678', 5512345678],
  // Other lines and ranges.
  ['33 1234 5678', 3312345678, 'Guadalajara'],
  ['81 1234 5678', 8112345678, 'Monterrey'],
  ['222 123 4567', 2221234567, 'Puebla'],
  ['999 123 4567', 9991234567, 'Mérida'],
  ['+52 664 123 4567', 6641234567, 'Tijuana'],
  ['800 123 4567', 8001234567, 'toll free'],
  ['044 664 123 4567', 6641234567],
  // Invalid.
  ['', 'unparseable'],
  ['   ', 'unparseable'],
  ['5512345678;5587654321', 'unparseable', 'two numbers in one cell: the second could be registered'],
  ['5512345678,123456789', 'unparseable', 'nine digits after a comma: a second number, not an extension'],
  ['55 1234 5678,,123', 5512345678, 'an auto-dialled extension'],
  ['5512345678,,:5587654321', 'unparseable'],
  ['5512345678,,-5587654321', 'unparseable'],
  ['55 1234 5678; 55 8765 4321', 'unparseable'],
  ['tel:+52-55-1234-5678;isdn=5587654321', 'unparseable', 'digits in a parameter that is no extension'],
  ['5512345678;\uff15\uff15\uff18\uff17\uff16\uff15\uff14\uff13\uff12\uff11', 'unparseable', 'full-width'],
  ['5512345678;', 5512345678, 'a trailing separator holds no number'],
  ['5512345678;foo=bar', 5512345678, 'an unknown parameter without digits, ignored as before'],
  ['n/a', 'unparseable'],
  ['five five', 'unparseable'],
  ['+', 'unparseable'],
  ['++52 55 1234 5678', 'unparseable'],
  ['55 1234\n5678', 'unparseable', 'a line break inside the number is not a separator'],
  ['55\r\n1234 5678', 'unparseable'],
  ['55 1234\u20285678', 'unparseable', 'line separator'],
  ['+52 55 1234 5678 #', 'unparseable'],
  ['+999 123 456', 'unparseable', 'no such calling code'],
  ['+0 55 1234 5678', 'unparseable', 'no calling code starts with 0'],
  ['5512345', 'invalid_length'],
  ['55123456789', 'invalid_length'],
  ['+52 55 1234 567', 'invalid_length'],
  ['+52 1 1234567890', 'invalid_length', 'obsolete form of an invalid number stays invalid'],
  ['044 1234567890', 'invalid_length'],
  ['1234567890', 'invalid_number'],
  ['0123456789', 'invalid_number'],
  ['+34 612 345 678', 'wrong_country'],
  ['001 212 555 0123', 'wrong_country'],
  ['+1 212 555 0123', 'wrong_country'],
  ['+1 555 123 4567', 'wrong_country', 'not a valid US number, foreign all the same'],
];

const AR: readonly Row[] = [
  // One Buenos Aires line (11 4123-4567): landline and mobile spellings share the key.
  ['1141234567', 1141234567],
  ['11 4123-4567', 1141234567],
  ['(011) 4123-4567', 1141234567],
  ['011 4123 4567', 1141234567],
  ['0 11 4123 4567', 1141234567],
  ['01141234567', 1141234567],
  ['+54 11 4123 4567', 1141234567],
  ['+541141234567', 1141234567],
  ['+54 011 4123 4567', 1141234567],
  ['0054 11 4123 4567', 1141234567],
  ['54 11 4123 4567', 1141234567],
  ['+54 9 11 4123 4567', 1141234567, 'international mobile: the 9 is a dialing mark'],
  // Rules revision 4: libphonenumber-js reads `0358 415-3627` as 0 + area 3584 + the mobile mark 15 + 3627
  // (too short) and kept it whole, invalid; 11 digits starting with 0 are the trunk prefix and a line.
  ['0358 415-3627', 3584153627, 'Río Cuarto, area 358'],
  ['03584153627', 3584153627],
  ['(0358) 415-3627', 3584153627],
  ['+54 358 415 3627', 3584153627],
  ['358 415-3627', 3584153627],
  ['0388 515-1829', 3885151829, 'San Salvador de Jujuy'],
  ['0383 515-3956', 3835153956, 'Catamarca'],
  ['11 4123 4567,,123', 1141234567, 'an auto-dialled extension'],
  ['011 4123-4567, 41234568', 'unparseable', 'a second number after a comma (revision 4)'],
  ['011 4123 4567,.41234568', 'unparseable'],
  ['011 4123 4567,\uff0e41234568', 'unparseable'],
  ['011 4123 4567,#41234568', 'unparseable', 'a second number after a one-character label'],
  ['011 4123 4567 ~ 41234568', 'unparseable'],
  ['011 4123 4567,\uff0341234568', 'unparseable'],
  ['011 4123 4567, interno 41234568', 'unparseable', 'more than six digits after a label'],
  ['011 4123 4567 interno 123456', 1141234567, 'six digits: an extension'],
  ['1141234567,412345', 'unparseable', 'six digits: an Argentine subscriber number'],
  ['+5491141234567', 1141234567],
  ['0054 9 11 4123 4567', 1141234567],
  ['549 11 4123-4567', 1141234567],
  ['5491141234567', 1141234567],
  ['9 11 4123 4567', 1141234567],
  ['011 15 4123 4567', 1141234567, 'domestic mobile: the 15 is a dialing mark'],
  ['011 15-4123-4567', 1141234567],
  ['(011) 15 4123-4567', 1141234567],
  ['11 15 4123 4567', 1141234567],
  ['+54 11 15 4123 4567', 1141234567],
  ['11 4123 4567 int. 23', 1141234567, 'extension'],
  ['011-4123-4567 ext 23', 1141234567],
  ['+54 11 4123-4567 interno 12', 1141234567, 'interno: the extension word in Argentina'],
  ['011 4123-4567 Interno: 12', 1141234567],
  ['11 4123 4567 INTERNO. 345', 1141234567],
  ['11 4123 4567 interno12', 1141234567],
  ['11 4123 4567, interno - 12', 1141234567],
  ['11 4123 4567 (interno 12)', 1141234567],
  ['11 4123 4567\tinterno\t12', 1141234567],
  ['11 4123 4567 interno 123456', 1141234567, 'up to 6 digits (rules revision 4; 9 after int before)'],
  ['11 4123 4567 interno 123456789', 'unparseable', 'more than six digits: a second number'],
  ...spaced([
    ['+54 9 11 4123 4567', 1141234567],
    ['(011) 15 4123-4567', 1141234567],
    ['+54 11 4123-4567 interno 12', 1141234567],
    ['0351 15 412 3456', 3514123456],
  ]),
  ['tel:+54-11-4123-4567', 1141234567],
  ['tel:+54-9-11-4123-4567', 1141234567],
  ['+54\u00a09\u00a011\u00a04123\u00a04567', 1141234567],
  [FW('+54 9 11 4123 4567'), 1141234567],
  [AI('011 15 4123 4567'), 1141234567],
  [EA('1141234567'), 1141234567],
  ['  11.4123.4567 ', 1141234567],
  ['+54 (11) 4123-4567', 1141234567],
  // A landline whose subscriber number starts with 15 is not a mobile.
  ['+54 11 1512 3456', 1115123456],
  // ...and written with the trunk 0: libphonenumber-js reads `0 11 15` as the mobile mark, finds the rest
  // too short and keeps all 11 digits, invalid; the 11 digits can only be the trunk 0 and this line (rules
  // revision 4, reference.ts argentineTrunkLine).
  ['011 1512-3456', 1115123456],
  // Córdoba (351), 3-digit area code, both mobile forms.
  ['351 412 3456', 3514123456],
  ['0351 412-3456', 3514123456],
  ['0351 15-412-3456', 3514123456],
  ['0 351 15 412 3456', 3514123456],
  ['+54 9 351 412 3456', 3514123456],
  ['+54 351 412 3456', 3514123456],
  // La Plata (221), Mendoza (261), Rosario (341), Bariloche (294), Corrientes (3794).
  ['0221 412-3456', 2214123456],
  ['+54 9 261 412 3456', 2614123456],
  ['0341 15 412 3456', 3414123456],
  ['+54 9 294 412 3456', 2944123456],
  ['0294 15 412 3456', 2944123456],
  ['+54 9 3794 12 3456', 3794123456],
  ['0800 123 4567', 8001234567, 'toll free'],
  ['0810 123 4567', 8101234567, 'UAN'],
  ['+54 800 123 4567', 8001234567],
  // Invalid.
  ['', 'unparseable'],
  ['sin número', 'unparseable'],
  ['1141234567;1145678901', 'unparseable', 'two numbers in one cell: the second could be registered'],
  ['+54 9 11 4123 4567;+54 9 11 4567 8901', 'unparseable'],
  ['-', 'unparseable'],
  ['11 4123 4567 internos 12', 'unparseable', 'interno only as a whole word'],
  ['11 4123 4567 intern 12', 'unparseable'],
  ['11 4123 4567 interno 1234567890', 'unparseable', 'more digits than int takes'],
  ['11 4123\n4567', 'unparseable', 'a line break inside the number is not a separator'],
  ['11 4123', 'invalid_length'],
  ['+54 9 11 15 4123 4567', 'invalid_length', 'both marks at once'],
  ['114123456789', 'invalid_length'],
  ['15 4123 4567', 'invalid_number', 'mobile without area code'],
  ['+54 15 4123 4567', 'invalid_number'],
  ['1234567890', 'invalid_number'],
  ['+54 9 11 4123 456', 'invalid_number'],
  ['011 15 4123 456', 'invalid_number'],
  ['+55 11 91234 5678', 'wrong_country', 'Brazil'],
  ['+56 9 6123 4567', 'wrong_country', 'Chile'],
  ['00 1 212 555 0123', 'wrong_country'],
];

const CO: readonly Row[] = [
  // One mobile line, every way it is written.
  ['3001234567', 3001234567],
  ['300 123 4567', 3001234567],
  ['300-123-4567', 3001234567],
  ['300.123.4567', 3001234567],
  ['(300) 123 4567', 3001234567],
  ['+57 300 123 4567', 3001234567],
  ['+573001234567', 3001234567],
  ['+57.300.123.4567', 3001234567],
  ['(+57) 300-123-4567', 3001234567],
  ['57 300 1234567', 3001234567],
  ['573001234567', 3001234567],
  ['005 57 300 123 4567', 3001234567, 'carrier IDD 005'],
  ['007 57 300 123 4567', 3001234567, 'carrier IDD 007'],
  ['009 57 300 123 4567', 3001234567, 'carrier IDD 009'],
  ['300 123 4567,12345', 3001234567, 'a short auto-dialled extension'],
  ['300 123 4567,,12345', 3001234567],
  // Rules revision 4: a second number after a comma was read as an extension (8-digit 46... is valid alone).
  ['46123456', 46123456],
  ['3001234567,46123456', 'unparseable', 'two numbers in one cell: the second could be registered'],
  ['3001234567, 46123456', 'unparseable'],
  ['3001234567,,46123456', 'unparseable'],
  ['601 234 5678,46123456', 'unparseable'],
  ['3001234567,-4612345', 'unparseable', 'a dash, a colon or a dot between the comma and the digits'],
  ['3001234567,:46123456', 'unparseable'],
  ['3001234567,,-6014612345', 'unparseable'],
  ['3001234567 ,- 46123456', 'unparseable'],
  ['300 123 4567 x,123456', 'unparseable', 'six digits after a comma, even after a label'],
  ['300 123 4567 ext,12345', 3001234567],
  ['601 234 5678,x 4123456', 'unparseable'],
  ['601 234 5678 ext. 4123456', 'unparseable', 'seven digits after a label: a second number'],
  ['601 234 5678 ext. 412345', 6012345678],
  ['00444 57 3001234567', 3001234567],
  ['03 300 123 4567', 3001234567, 'national carrier prefix'],
  ['tel:+57-300-123-4567', 3001234567],
  ['300 123 4567 ext 5', 3001234567],
  ['300\u00a0123\u00a04567', 3001234567],
  ['300 123 4567 interno 5', 3001234567, 'interno reads alike in every country'],
  ['(+57)\t300\u202f123-4567', 3001234567],
  ...spaced([
    ['+57 300 123 4567', 3001234567],
    ['(601) 234-5678', 6012345678],
    ['300 123 4567 ext 5', 3001234567],
    ['005 57 300 123 4567', 3001234567],
  ]),
  ['300 123 4567 ', 3001234567],
  [FW('300 123 4567'), 3001234567],
  [AI('3001234567'), 3001234567],
  [EA('+57 300 123 4567'), 3001234567],
  // Other mobiles.
  ['310 123 4567', 3101234567],
  ['315 123 4567', 3151234567],
  ['320 123 4567', 3201234567],
  ['+57 321 123 4567', 3211234567],
  ['350 123 4567', 3501234567],
  // Landlines since 2021: 60 + region + 7 digits.
  ['601 234 5678', 6012345678, 'Bogotá'],
  ['(601) 234 5678', 6012345678],
  ['601-234-5678', 6012345678],
  ['+57 601 234 5678', 6012345678],
  ['0 601 234 5678', 6012345678],
  ['060 1234 5678', 6012345678],
  ['604 234 5678', 6042345678, 'Medellín'],
  ['602 234 5678', 6022345678, 'Cali'],
  ['605 234 5678', 6052345678, 'Barranquilla'],
  ['+57 604 234 5678', 6042345678],
  ['1800 123 4567', 18001234567, 'toll free'],
  ['01 8000 123456', 18000123456],
  ['018001234567', 18001234567],
  // Invalid.
  ['', 'unparseable'],
  ['ninguno', 'unparseable'],
  ['300 123 4567;phone-context=example.com', 'unparseable'],
  ['300 123 4567;320 765 4321', 'unparseable', 'two numbers in one cell: the second could be registered'],
  ['3001234567;3207654321', 'unparseable'],
  ['300 123 4567;', 3001234567, 'a trailing separator holds no number'],
  ['+57', 'invalid_length', 'two digits only'],
  ['2345678', 'invalid_length', 'pre-2021 7-digit landline'],
  ['601 234 567', 'invalid_length'],
  ['300 123 456', 'invalid_length'],
  ['1 234 5678', 'invalid_number', 'pre-2021 Bogotá form'],
  ['+57 1 234 5678', 'invalid_number'],
  ['3991234567', 'invalid_number'],
  ['1234567890', 'invalid_number'],
  ['300 123 45678', 'invalid_number'],
  ['0300 123 4567', 'invalid_number'],
  ['0057 300 123 4567', 'wrong_country', 'in Colombia 005 is a carrier IDD: this dials +7 300...'],
  ['+1 300 123 4567', 'wrong_country', 'foreign calling code, valid there or not'],
  ['+34 612 345 678', 'wrong_country'],
  ['+52 55 1234 5678', 'wrong_country'],
  ['00 1 212 555 0123', 'invalid_length', '00 alone is not an IDD in Colombia'],
  ['009 1 212 555 0123', 'wrong_country'],
];

const TABLES: Record<NumberingCountry, readonly Row[]> = { mx: MX, ar: AR, co: CO };
const IMPLEMENTATIONS: readonly NumberingImplementation[] = ['reference', 'fast'];

describe.each(['mx', 'ar', 'co'] as const)('written forms of %s numbers', (country) => {
  const rows = TABLES[country];

  it('has at least 60 forms, valid and invalid', () => {
    expect(rows.length).toBeGreaterThanOrEqual(60);
    expect(rows.filter(([, e]) => typeof e === 'number').length).toBeGreaterThan(30);
    expect(rows.filter(([, e]) => typeof e === 'string').length).toBeGreaterThan(10);
  });

  describe.each(IMPLEMENTATIONS)('%s implementation', (implementation) => {
    const numbering = createNumbering(country, implementation);
    it.each(rows.map(([input, expected]) => [input, expected] as [string, Row[1]]))(
      '%j -> %s',
      (input, expected) => {
        const c = numbering.classify(input);
        const n = numbering.normalize(input);
        if (typeof expected === 'number') {
          expect(c.key).toBe(expected);
          expect(n).toBe(expected);
          expect(reasonOf(c.outcome)).toBeUndefined();
          expect(c.e164).toMatch(/^\+[1-9]\d{7,15}$/);
        } else {
          expect(reasonOf(c.outcome)).toBe(expected);
          expect(c.key).toBe(0);
          expect(c.e164).toBeNull();
          expect(n).toBe(-c.outcome);
        }
      },
    );
  });
});
