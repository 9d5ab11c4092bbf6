import { constants } from 'node:buffer';
import { mkdtemp, rm, stat, truncate, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { detectFormat, InputFileError, parsePhoneList, readInput } from '../src/index.js';
import { listEntries, MAX_INPUT_BYTES } from '../src/input.js';

/** The error a promise rejects with (fails the test when it resolves). */
async function rejection<E = Error>(promise: Promise<unknown>): Promise<E> {
  try {
    await promise;
  } catch (error) {
    return error as E;
  }
  throw new Error('expected a rejection');
}

describe('parsePhoneList', () => {
  it('reads a JSON array as is: order, duplicates and spellings preserved', () => {
    expect(parsePhoneList('["+57 300 123 4567", "3001234567", "3001234567", "tel:+573001234567"]')).toEqual([
      '+57 300 123 4567',
      '3001234567',
      '3001234567',
      'tel:+573001234567',
    ]);
    expect(parsePhoneList('\uFEFF  \n [ "1" ]\n')).toEqual(['1']);
  });

  it('reads one number per line, CRLF or LF, ignoring trailing blank lines only', () => {
    expect(parsePhoneList('3001234567\n+57 601 234 5678\n')).toEqual(['3001234567', '+57 601 234 5678']);
    expect(parsePhoneList('a\r\nb\r\n\r\n  \n')).toEqual(['a', 'b']);
    expect(parsePhoneList('a\n\nb')).toEqual(['a', '', 'b']);
    expect(parsePhoneList('55 1234 5678 ')).toEqual(['55 1234 5678 ']);
  });

  it('rejects non-arrays, non-string elements and empty files without quoting the content', () => {
    const secret = '5512345678';
    const cases: [string, RegExp][] = [
      [`[${secret}]`, /element 0 .* is not a string/],
      [`["${secret}", 5]`, /element 1/],
      [`["${secret}",`, /not valid JSON/],
      ['[]', /no phone numbers/],
      ['', /no phone numbers/],
      ['\n\n', /no phone numbers/],
    ];
    for (const [text, message] of cases) {
      let error: unknown;
      try {
        parsePhoneList(text);
      } catch (caught) {
        error = caught;
      }
      expect(error, text).toBeInstanceOf(InputFileError);
      expect((error as Error).message).toMatch(message);
      expect((error as Error).message).not.toContain(secret);
    }
  });
});

describe('detectFormat', () => {
  it('follows --input-format, then CSV options, then the extension, then the content', () => {
    expect(detectFormat('a.txt', 'x,y', { inputFormat: 'lines' })).toBe('lines');
    expect(detectFormat('a.txt', '3001234567', { column: 2 })).toBe('csv');
    expect(detectFormat('a.txt', '3001234567', { delimiter: ';' })).toBe('csv');
    expect(detectFormat('a.CSV', '3001234567', {})).toBe('csv');
    expect(detectFormat('a.tsv', '3001234567', {})).toBe('tsv');
    expect(detectFormat('a.json', '[', {})).toBe('json');
    expect(detectFormat('-', ' ["1"]', {})).toBe('json');
    expect(detectFormat('numbers', 'name;phone', {})).toBe('csv');
    expect(detectFormat('numbers', '+57 (601) 234-5678', {})).toBe('lines');
  });
});

describe('readInput', () => {
  let dir = '';
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'dnc-cli-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('reads a list file (JSON or lines) with no table layout', async () => {
    const file = join(dir, 'numbers.txt');
    await writeFile(file, '1\n2\n');
    await expect(readInput(file, {})).resolves.toEqual({
      path: file,
      phones: ['1', '2'],
      table: undefined,
      bytes: Buffer.from('1\n2\n'),
    });
    const json = join(dir, 'numbers.json');
    await writeFile(json, '["3","4"]');
    expect((await readInput(json, {})).phones).toEqual(['3', '4']);
  });

  it('names a missing file', async () => {
    await expect(readInput(join(dir, 'nope.json'), {})).rejects.toThrow(/no such file: .*nope.json/);
  });

  it('limits: 64 characters per number pass, 65 are refused before any call (position, not content)', async () => {
    const file = join(dir, 'long.txt');
    await writeFile(file, `1\n${'9'.repeat(64)}\n`);
    expect((await readInput(file, {})).phones[1]).toHaveLength(64);
    await writeFile(file, `1\n${'9'.repeat(65)}\n`);
    const error = await rejection<Error>(readInput(file, {}));
    expect(error).toBeInstanceOf(InputFileError);
    expect(error.message).toMatch(/element 2 has more than 64 characters/);
    expect(error.message).not.toContain('9'.repeat(10));
  });

  it('the limit counts characters as the schema does (code points): 64 emoji pass, 65 are refused', async () => {
    const file = join(dir, 'emoji.json');
    await writeFile(file, JSON.stringify(['😀'.repeat(64)]));
    expect((await readInput(file, {})).phones[0]).toHaveLength(128);
    await writeFile(file, JSON.stringify(['1', '😀'.repeat(65)]));
    await expect(readInput(file, {})).rejects.toThrow(/element 2 has more than 64 characters/);
  });

  // Found by a review (2026-12-05): the whole file was read before any limit applied, so a multi-GB file
  // passed by mistake was loaded (up to 2 GiB) before it was refused.
  it('a file over 1 GiB is refused by its size, before it is read (a sparse file: no disk space)', async () => {
    const file = join(dir, 'huge.txt');
    await writeFile(file, '');
    await truncate(file, 1024 ** 3 + 1);
    expect((await stat(file)).size).toBe(1024 ** 3 + 1);
    const before = process.memoryUsage().arrayBuffers;
    const error = await rejection<Error>(readInput(file, {}));
    expect(error).toBeInstanceOf(InputFileError);
    expect(error.message).toBe(
      `${file} is larger than 1 GiB: not the input of one job (at most 500000 rows)`,
    );
    expect(process.memoryUsage().arrayBuffers - before).toBeLessThan(64 * 1024 ** 2);
    expect(MAX_INPUT_BYTES).toBe(1024 ** 3);
  });

  // Found by a review (2026-12-05): a list was decoded and split whole before it was counted, and 300 MiB of
  // short lines exhausted the heap. Counted on the bytes first, as the parse would count them.
  it('a list is counted on its bytes as the parse counts it', () => {
    const cases = [
      '3001234567\n3001234568\n',
      '\uFEFF3001234567\r\n\r\n3001234568\r\n \n\t\n',
      '\n\n3001234567',
      ' [ "300 123", "a \\" ] [", "x" ]  \n',
      '["a"]',
      '\n',
    ];
    for (const text of cases) {
      const bytes = Buffer.from(text);
      const parsed = text.trim() === '' ? [] : parsePhoneList(text);
      expect([text, listEntries(bytes)]).toEqual([text, parsed.length]);
    }
  });

  it('a list of more numbers than a job takes is refused, exit 2, before it is decoded', async () => {
    const file = join(dir, 'many.txt');
    await writeFile(file, '1\n'.repeat(500_001));
    await expect(readInput(file, {})).rejects.toThrow(
      new InputFileError(`${file} holds more than 500000 numbers: more than one job takes`),
    );
  });

  // Found by a review (2026-12-05): a list longer than V8's longest string (about 512 MiB) failed as an
  // "unexpected" error (exit 1) instead of an input error (exit 2, nothing sent).
  it('a list longer than the longest string is an input error (a sparse file: no disk space)', async () => {
    const file = join(dir, 'long-list.txt');
    await writeFile(file, '');
    await truncate(file, constants.MAX_STRING_LENGTH + 1);
    const error = await rejection<Error>(readInput(file, {}));
    expect(error).toBeInstanceOf(InputFileError);
    expect(error.message).toBe(
      `${file} is larger than any input of one job (500000 numbers of at most 64 characters)`,
    );
  });

  it('the bound is of bytes, file or standard input: at the bound read, past it refused without the numbers', async () => {
    const file = join(dir, 'bound.txt');
    await writeFile(file, '3001234567\n');
    expect((await readInput(file, {}, { maxBytes: 11 })).phones).toEqual(['3001234567']);
    await expect(readInput(file, {}, { maxBytes: 10 })).rejects.toThrow(
      new InputFileError(`${file} is larger than 10 bytes: not the input of one job (at most 500000 rows)`),
    );
    const stdin = () => Readable.from([Buffer.from('3001234567\n'), '3101234567\n']);
    await expect(readInput('-', {}, { stdin: stdin(), maxBytes: 22 })).resolves.toEqual({
      path: '-',
      phones: ['3001234567', '3101234567'],
      table: undefined,
      bytes: Buffer.from('3001234567\n3101234567\n'),
    });
    const error = await rejection<Error>(readInput('-', {}, { stdin: stdin(), maxBytes: 21 }));
    expect(error).toBeInstanceOf(InputFileError);
    expect(error.message).toBe(
      'standard input is larger than 21 bytes: not the input of one job (at most 500000 rows)',
    );
  });

  it('reading standard input stops when the run is interrupted', async () => {
    const stdin = new Readable({ read() {} });
    stdin.push('3001234567\n'); // and never ended
    const controller = new AbortController();
    const reading = readInput('-', {}, { stdin, signal: controller.signal });
    setTimeout(() => controller.abort(), 10);
    await expect(reading).rejects.toMatchObject({ name: 'AbortError' });
  });
});
