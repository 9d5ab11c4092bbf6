import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chooseColumn, detectDelimiter, InputFileError, looksLikeHeader, readInput } from '../src/index.js';

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

  it('a header has no cell with 5 digits or more', () => {
    expect(looksLikeHeader(['Name', 'Phone 1', 'Zip'])).toBe(true);
    expect(looksLikeHeader(['Ana', '300 123 4567'])).toBe(false);
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
    expect(input.table).toEqual({ delimiter: ',', header: ['Name', 'Phone', 'Note'], column: 1 });
  });

  it('any delimiter: semicolon detected, TSV by extension, pipe given, no header', async () => {
    expect((await readInput(await file('a.csv', 'nombre;celular\nAna;3001234567\n'), {})).phones).toEqual([
      '3001234567',
    ]);
    expect((await readInput(await file('a.tsv', 'x\t3001234567\ny\t3109999999\n'), {})).table).toEqual({
      delimiter: '\t',
      header: undefined,
      column: 1,
    });
    const piped = await readInput(await file('a.txt', '3001234567|Ana\n3109999999|Luis\n'), {
      delimiter: '|',
    });
    expect(piped.phones).toEqual(['3001234567', '3109999999']);
    expect(piped.table?.header).toBeUndefined();
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
