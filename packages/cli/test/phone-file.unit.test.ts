import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PhoneFileError, parsePhoneList, readPhoneFile } from '../src/index.js';

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
      expect(error, text).toBeInstanceOf(PhoneFileError);
      expect((error as Error).message).toMatch(message);
      expect((error as Error).message).not.toContain(secret);
    }
  });
});

describe('readPhoneFile', () => {
  let dir = '';
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'dnc-cli-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('reads a file, and stdin for "-"', async () => {
    const file = join(dir, 'numbers.txt');
    await writeFile(file, '1\n2\n');
    await expect(readPhoneFile(file)).resolves.toEqual(['1', '2']);
    await expect(readPhoneFile('-', Readable.from(['["3",', '"4"]']))).resolves.toEqual(['3', '4']);
  });

  it('names a missing file', async () => {
    await expect(readPhoneFile(join(dir, 'nope.json'))).rejects.toThrow(/no such file: .*nope.json/);
  });
});
