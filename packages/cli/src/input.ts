import { createWriteStream } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { extname, join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { LIMITS } from '@dnc-scrub/sdk';
import { InputFileError, isTooLong, readTable, type TableLayout, type TableOptions } from './table.js';

/** The numbers of an input file, and what to find its rows again in (the CSV output parses a table again). */
export interface PhoneInput {
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
 * Reads the file once, whole: the numbers sent and the rows written are of the same bytes whatever happens
 * to the file meanwhile. Memory grows with the file (at most 500,000 rows are accepted).
 */
export async function readInput(path: string, options: TableOptions): Promise<PhoneInput> {
  let bytes: Buffer;
  try {
    bytes = await readFile(path);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new InputFileError(
      code === 'ENOENT' ? `no such file: ${path}` : `cannot read ${path} (${code ?? 'error'})`,
    );
  }
  const first = firstLine(bytes);
  const format = detectFormat(path, first, options);
  if (format === 'csv' || format === 'tsv') {
    const { phones, layout } = await readTable(bytes, first, { ...options, inputFormat: format });
    return { path, phones, table: layout, bytes };
  }
  if (format === 'json' && !first.trimStart().startsWith('['))
    throw new InputFileError('the JSON must be an array of strings');
  return { path, phones: checkList(parsePhoneList(bytes.toString('utf8'))), table: undefined, bytes };
}

/**
 * Standard input copied to a private temporary file, read then like any file (`jobs result --input -` too).
 * `dispose` removes it.
 */
export async function spoolStdin(
  stdin: NodeJS.ReadableStream,
  signal?: AbortSignal,
): Promise<{ path: string; dispose(): Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), 'dnc-'));
  const path = join(dir, 'stdin');
  const dispose = () => rm(dir, { recursive: true, force: true });
  try {
    // Interrupted while numbers are still being typed or piped in: stop, and leave no copy behind.
    await pipeline(stdin, createWriteStream(path, { mode: 0o600 }), signal ? { signal } : {});
  } catch (error) {
    await dispose();
    throw error;
  }
  return { path, dispose };
}
