import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  chooseColumn,
  detectDelimiter,
  InputFileError,
  looksLikeHeader,
  namesPhone,
  readInput,
} from '../src/index.js';

/** The error a promise rejects with (fails the test when it resolves). */
async function rejection<E = Error>(promise: Promise<unknown>): Promise<E> {
  try {
    await promise;
  } catch (error) {
    return error as E;
  }
  throw new Error('expected a rejection');
}

let dir = '';
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'dnc-table-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function file(name: string, text: string | Buffer): Promise<string> {
  const path = join(dir, name);
  await writeFile(path, text);
  return path;
}

describe('CSV/TSV detection (pure)', () => {
  it('detects the delimiter of the first line outside quotes', () => {
    expect(detectDelimiter('name,phone,city')).toBe(',');
    expect(detectDelimiter('name;phone;"a,b"')).toBe(';');
    expect(detectDelimiter('name\tphone')).toBe('\t');
    expect(detectDelimiter('a|b|c')).toBe('|');
    expect(detectDelimiter('3001234567')).toBe(',');
  });

  it('a header names a phone column and has no cell with 5 digits or more', () => {
    expect(looksLikeHeader(['Name', 'Phone 1', 'Zip'])).toBe(true);
    expect(looksLikeHeader(['Ana', '300 123 4567'])).toBe(false);
    // Found by a review (2026-12-03): a first row without 5 digits was taken for a header and dropped
    // unseen (`n/a`, `unknown`, a name): the result then lacked that row and the exit code was 0.
    expect(looksLikeHeader(['n/a'])).toBe(false);
    expect(looksLikeHeader(['unknown'])).toBe(false);
    expect(looksLikeHeader(['Ana Castellanos', 'n/a', 'Bogotá'])).toBe(false);
    expect(looksLikeHeader(['Teléfonos'])).toBe(true);
  });

  it('a phone word names a phone column as a whole word, never inside another or as "number"', () => {
    for (const name of [
      'Phone',
      'phone_number',
      'phoneNumber',
      'MobilePhone',
      'Tel.',
      'Teléfono móvil',
      'WhatsApp',
      'Nº celular',
      'CELL',
    ])
      expect(namesPhone(name), name).toBe(true);
    for (const name of [
      'Hotel',
      'Account Number',
      'Número de documento',
      'Number',
      'Cellar',
      'Telex ID',
      'Name',
    ])
      expect(namesPhone(name), name).toBe(false);
  });

  // Found by a review (2026-12-03): the phone column was the first header that contained a phone word
  // anywhere (`Número de documento`, `Account Number`, `Hotel`), or without a header the first cell with
  // 5 digits (an ID before the phone): every row was then answered for a number that is not its phone.
  it('a column guessed only when exactly one can be the phones; any doubt asks for --column', () => {
    expect(chooseColumn(['Nombre', 'Número de documento', 'Celular'], true, undefined)).toBe(2);
    expect(chooseColumn(['Account Number', 'Name', 'Phone'], true, undefined)).toBe(2);
    expect(chooseColumn(['Hotel', 'Guest', 'Tel'], true, undefined)).toBe(2);
    expect(() => chooseColumn(['Hotel', 'City'], true, undefined)).toThrow(/use --column/);
    expect(() => chooseColumn(['Phone', 'Mobile'], true, undefined)).toThrow(
      /several columns are named like phones \("Phone", "Mobile"\): use --column/,
    );
    const headless = (() => {
      try {
        chooseColumn(['1020304050', 'Ana', '3001234567'], false, undefined);
      } catch (e) {
        return (e as Error).message;
      }
    })();
    expect(headless).toMatch(/no header row names one\): use --column N/);
    expect(headless).not.toMatch(/1020304050|3001234567/);
  });

  it('chooses the phone column by name, number, header word or first number', () => {
    expect(chooseColumn(['Name', 'Mobile'], true, 'mobile')).toBe(1);
    expect(chooseColumn(['a', 'b', 'c'], false, 3)).toBe(2);
    expect(chooseColumn(['Nombre', 'Teléfono'], true, undefined)).toBe(1);
    expect(chooseColumn(['Ana', '300 123 4567'], false, undefined)).toBe(1);
    expect(chooseColumn(['only'], true, undefined)).toBe(0);
    expect(() => chooseColumn(['a', 'b'], true, 'tel')).toThrow(
      /no column named "tel"; the header has "a", "b"/,
    );
    // A file without a header read with --column NAME: its first row is numbers, which are never echoed.
    const headless = (() => {
      try {
        chooseColumn(['+57 300 123 4567', 'Ana'], true, 'Phone');
      } catch (e) {
        return (e as Error).message;
      }
    })();
    expect(headless).toMatch(/no column named "Phone"; the header has \(a value with digits\), "Ana"/);
    expect(headless).not.toMatch(/300|4567/);
    expect(() => chooseColumn(['a', 'b'], false, 'tel')).toThrow(/no header row/);
    expect(() => chooseColumn(['a', 'b'], false, 3)).toThrow(/has 2 column/);
    expect(() => chooseColumn(['Name', 'City'], true, undefined)).toThrow(/use --column/);
  });
});

describe('reading CSV/TSV files', () => {
  it('quoted fields (delimiter, quote and line break inside), BOM, CRLF, header detected', async () => {
    const path = await file(
      'contacts.csv',
      Buffer.concat([
        Buffer.from([0xef, 0xbb, 0xbf]),
        Buffer.from(
          'Name,Phone,Note\r\n"Pérez, Ana","+57 300 123 4567","said ""call\r\nlater"""\r\nLuis,3109999999,\r\n',
        ),
      ]),
    );
    const input = await readInput(path, {});
    expect(input.phones).toEqual(['+57 300 123 4567', '3109999999']);
    expect(input.table).toEqual({ delimiter: ',', header: ['Name', 'Phone', 'Note'], column: 1, width: 3 });
  });

  it('any delimiter: semicolon detected, TSV by extension, pipe given, no header', async () => {
    expect((await readInput(await file('a.csv', 'nombre;celular\nAna;3001234567\n'), {})).phones).toEqual([
      '3001234567',
    ]);
    expect((await readInput(await file('a.tsv', 'x\t3001234567\ny\t3109999999\n'), {})).table).toEqual({
      delimiter: '\t',
      header: undefined,
      column: 1,
      width: 2,
    });
    const piped = await readInput(await file('a.txt', '3001234567|Ana\n3109999999|Luis\n'), {
      delimiter: '|',
    });
    expect(piped.phones).toEqual(['3001234567', '3109999999']);
    expect(piped.table?.header).toBeUndefined();
  });

  it('a one-column file whose first row is no header: every row is checked, the first one too', async () => {
    const input = await readInput(await file('first.csv', 'n/a\n3001234567\n3109999999\n'), {});
    expect(input.phones).toEqual(['n/a', '3001234567', '3109999999']);
    expect(input.table?.header).toBeUndefined();
    // Named by --header when the guess is wrong.
    const said = await readInput(await file('said.csv', 'Numbers\n3001234567\n'), { header: true });
    expect(said.phones).toEqual(['3001234567']);
  });

  it('--column by number with --header, and ragged rows give an empty input (kept in place)', async () => {
    const path = await file('r.csv', 'a,b,c\nx,y,3001234567\nshort\n');
    const input = await readInput(path, { column: 3, header: true });
    expect(input.phones).toEqual(['3001234567', '']);
  });

  it('a broken quote is an input error that names the line, not the content', async () => {
    const path = await file('bad.csv', 'name,phone\nAna,"3001234567\n');
    const error = await rejection<Error>(readInput(path, {}));
    expect(error).toBeInstanceOf(InputFileError);
    expect(error.message).toMatch(/not valid CSV near line/);
    expect(error.message).not.toContain('3001234567');
  });

  it('limits: 500,000 data rows pass; 500,001 are refused; a 65-character cell is refused by row', async () => {
    const rows = (n: number) => `phone\n${'3001234567\n'.repeat(n)}`;
    expect((await readInput(await file('max.csv', rows(500_000)), {})).phones).toHaveLength(500_000);
    await expect(readInput(await file('over.csv', rows(500_001)), {})).rejects.toThrow(
      /more than 500000 rows/,
    );
    const long = await file('long.csv', `name,phone\nAna,${'9'.repeat(64)}\nLuis,${'9'.repeat(65)}\n`);
    await expect(readInput(long, {})).rejects.toThrow(/row 3: the phone cell has more than 64 characters/);
  });
});
