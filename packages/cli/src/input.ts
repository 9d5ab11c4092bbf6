import { constants } from 'node:buffer';
import { type FileHandle, open } from 'node:fs/promises';
import { extname } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { LIMITS } from '@dnc-scrub/sdk';
import { InputFileError, isTooLong, readTable, type TableLayout, type TableOptions } from './table.js';

/** The numbers of an input file, and what to find its rows again in (the CSV output parses a table again). */
export interface PhoneInput {
  /** The file, or "-" for standard input. */
  path: string;
  phones: string[];
  /** Set for CSV/TSV input. */
  table: TableLayout | undefined;
  /**
   * The file's bytes, read once. The output rows are parsed from them, never from the file again: a file
   * changed between two reads made the output fail part-way, with the rows before the change already on
   * stdout (found by a review, 2026-12-05).
   */
  bytes: Buffer;
}

/**
 * A JSON array of strings, or one number per line. Lines keep their exact text (the service parses spellings);
 * trailing blank lines are ignored, other blank lines are kept as inputs so positions and counts match the file.
 */
export function parsePhoneList(text: string): string[] {
  const content = text.replace(/^\uFEFF/, '');
  if (content.trimStart().startsWith('[')) {
    let value: unknown;
    try {
      value = JSON.parse(content);
    } catch {
      // The parser's message would quote the file: keep the numbers out of the terminal and logs.
      throw new InputFileError('the file starts with "[" but is not valid JSON');
    }
    if (!Array.isArray(value)) throw new InputFileError('the JSON must be an array of strings');
    value.forEach((item, index) => {
      if (typeof item !== 'string') {
        throw new InputFileError(`element ${index} of the JSON array is not a string (quote every number)`);
      }
    });
    if (value.length === 0) throw new InputFileError('the file holds no phone numbers');
    return value as string[];
  }
  const lines = content.split(/\r?\n/);
  while (lines.length > 0 && (lines[lines.length - 1] as string).trim() === '') lines.pop();
  if (lines.length === 0) throw new InputFileError('the file holds no phone numbers');
  return lines;
}

type Format = NonNullable<TableOptions['inputFormat']>;

const isBlank = (byte: number | undefined) =>
  byte === 0x20 || byte === 0x09 || byte === 0x0a || byte === 0x0d;

/**
 * How many entries `parsePhoneList` would find, counted on the bytes without decoding them: the strings of a
 * JSON array (at its top level), or the lines up to the last one that is not blank: the count the parse finds
 * for a valid list, so a list refused for it does hold too many (an invalid one is refused by the parse anyway).
 */
export function listEntries(bytes: Buffer): number {
  let start = bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf ? 3 : 0;
  let end = bytes.length;
  while (end > start && isBlank(bytes[end - 1])) end--;
  while (start < end && isBlank(bytes[start])) start++;
  if (start === end) return 0;
  // Lines: blank leading lines are inputs too, so every newline before the last non-blank byte counts.
  if (bytes[start] !== 0x5b) return countNewlines(bytes, 0, end) + 1;
  let count = 0;
  let depth = 0;
  let inString = false;
  for (let i = start; i < end; i++) {
    const b = bytes[i];
    if (inString) {
      if (b === 0x5c) i++;
      else if (b === 0x22) inString = false;
    } else if (b === 0x22) {
      inString = true;
      if (depth === 1) count++;
    } else if (b === 0x5b || b === 0x7b) depth++;
    else if (b === 0x5d || b === 0x7d) depth--;
  }
  return count;
}

function countNewlines(bytes: Buffer, from: number, to: number): number {
  let count = 0;
  for (let i = from; i < to; i++) if (bytes[i] === 0x0a) count++;
  return count;
}

/** The first line of the file (up to 64 KiB), without a byte order mark. */
function firstLine(bytes: Buffer): string {
  const text = bytes
    .subarray(0, 65_536)
    .toString('utf8')
    .replace(/^\uFEFF/, '');
  return text.split(/\r?\n/, 1)[0] ?? '';
}

/** Said by --input-format, else by a CSV option or the extension, else by the content. */
export function detectFormat(path: string, first: string, options: TableOptions): Format {
  if (options.inputFormat) return options.inputFormat;
  if (options.delimiter !== undefined || options.column !== undefined || options.header !== undefined)
    return 'csv';
  const ext = extname(path).toLowerCase();
  if (ext === '.csv') return 'csv';
  if (ext === '.tsv' || ext === '.tab') return 'tsv';
  if (ext === '.json') return 'json';
  if (first.trimStart().startsWith('[')) return 'json';
  return /[,;\t|]/.test(first) ? 'csv' : 'lines';
}

function checkList(phones: string[]): string[] {
  if (phones.length > LIMITS.v2MaxInputs) {
    throw new InputFileError(
      `the file holds ${phones.length} numbers; at most ${LIMITS.v2MaxInputs} per job`,
    );
  }
  const long = phones.findIndex(isTooLong);
  if (long >= 0) {
    throw new InputFileError(
      `element ${long + 1} has more than ${LIMITS.maxPhoneLength} characters (the service refuses it)`,
    );
  }
  return phones;
}

/**
 * The largest input read, a file or standard input. 500,000 rows (the most one job takes) of a wide CSV fit
 * in it (2 KiB a row); a bigger file is not the input of one job, and is refused before it is read: the input
 * is held in memory whole, and a multi-GB file passed by mistake was loaded (up to 2 GiB) before its rows were
 * counted (found by a review, 2026-12-05).
 */
export const MAX_INPUT_BYTES = 1024 ** 3;

/** Where `readInput` reads from besides files. */
export interface InputSource {
  /** What "-" reads (standard input). */
  stdin?: NodeJS.ReadableStream | undefined;
  /** Stops reading standard input (Ctrl-C while numbers are still being typed or piped in). */
  signal?: AbortSignal | undefined;
  /** Bytes accepted; MAX_INPUT_BYTES unless a test says less. */
  maxBytes?: number;
}

function tooLarge(what: string, maxBytes: number): InputFileError {
  const size = maxBytes % 1024 ** 3 === 0 ? `${maxBytes / 1024 ** 3} GiB` : `${maxBytes} bytes`;
  return new InputFileError(
    `${what} is larger than ${size}: not the input of one job (at most ${LIMITS.v2MaxInputs} rows)`,
  );
}

/** A stream's bytes, refused as soon as they pass `maxBytes` (counted while they come, nothing kept on disk). */
async function collect(
  stream: NodeJS.ReadableStream,
  what: string,
  maxBytes: number,
  signal?: AbortSignal,
): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  await pipeline(
    stream,
    async (source: AsyncIterable<Buffer | string>) => {
      for await (const chunk of source) {
        const bytes = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
        size += bytes.length;
        if (size > maxBytes) throw tooLarge(what, maxBytes);
        chunks.push(bytes);
      }
    },
    signal ? { signal } : {},
  );
  return Buffer.concat(chunks, size);
}

function unreadable(path: string, error: unknown): InputFileError {
  const code = (error as NodeJS.ErrnoException).code;
  return new InputFileError(
    code === 'ENOENT' ? `no such file: ${path}` : `cannot read ${path} (${code ?? 'error'})`,
  );
}

/**
 * A file's bytes: its size is looked at before anything is read. A pipe or device (`<(...)`, /dev/stdin)
 * has no size beforehand: its bytes are counted while they come.
 */
async function fileBytes(path: string, maxBytes: number, signal?: AbortSignal): Promise<Buffer> {
  let handle: FileHandle;
  try {
    handle = await open(path, 'r');
  } catch (error) {
    throw unreadable(path, error);
  }
  try {
    const stats = await handle.stat();
    if (stats.size > maxBytes) throw tooLarge(path, maxBytes);
    const bytes = stats.isFile()
      ? await handle.readFile()
      : await collect(handle.createReadStream({ autoClose: false }), path, maxBytes, signal);
    // A file that grew after its size was read.
    if (bytes.length > maxBytes) throw tooLarge(path, maxBytes);
    return bytes;
  } catch (error) {
    // Interrupted (Ctrl-C while a pipe given as a path was read): reported as such, exit 130, not as a bad file.
    if (signal?.aborted || error instanceof InputFileError) throw error;
    throw unreadable(path, error);
  } finally {
    await handle.close();
  }
}

/**
 * Reads the input once, whole: the numbers sent and the rows written are of the same bytes whatever happens
 * to the file meanwhile. Memory grows with the input (at most MAX_INPUT_BYTES, and 500,000 rows). "-" is
 * standard input, read straight into memory: never copied to a file, which a process killed outright
 * (SIGKILL) left behind with the numbers in it (found by a review, 2026-12-05).
 */
export async function readInput(
  path: string,
  options: TableOptions,
  from: InputSource = {},
): Promise<PhoneInput> {
  const maxBytes = from.maxBytes ?? MAX_INPUT_BYTES;
  const bytes =
    path === '-'
      ? await collect(from.stdin ?? process.stdin, 'standard input', maxBytes, from.signal)
      : await fileBytes(path, maxBytes, from.signal);
  const first = firstLine(bytes);
  const format = detectFormat(path, first, options);
  if (format === 'csv' || format === 'tsv') {
    const { phones, layout } = await readTable(bytes, first, { ...options, inputFormat: format });
    return { path, phones, table: layout, bytes };
  }
  if (format === 'json' && !first.trimStart().startsWith('['))
    throw new InputFileError('the JSON must be an array of strings');
  // Counted on the bytes first: a list decoded and split whole before its count was checked could exhaust the
  // heap (300 MiB of short lines crashed the process; found by a review, 2026-12-05). Every input error is
  // exit 2 with nothing sent.
  const what = path === '-' ? 'standard input' : path;
  if (listEntries(bytes) > LIMITS.v2MaxInputs)
    throw new InputFileError(
      `${what} holds more than ${LIMITS.v2MaxInputs} numbers: more than one job takes`,
    );
  if (bytes.length > constants.MAX_STRING_LENGTH)
    throw new InputFileError(
      `${what} is larger than any input of one job (${LIMITS.v2MaxInputs} numbers of at most ${LIMITS.maxPhoneLength} characters)`,
    );
  return { path, phones: checkList(parsePhoneList(bytes.toString('utf8'))), table: undefined, bytes };
}
