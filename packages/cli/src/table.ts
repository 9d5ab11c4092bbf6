import { Readable } from 'node:stream';
import { LIMITS } from '@dnc-scrub/sdk';
import { CsvError, type Options as CsvOptions, parse } from 'csv-parse';

/** How to read a CSV/TSV file; what is absent is detected. */
export interface TableOptions {
  inputFormat?: 'json' | 'lines' | 'csv' | 'tsv';
  delimiter?: string;
  header?: boolean;
  /** A header name, or a 1-based column number. */
  column?: string | number;
}

/** A CSV/TSV file as it was understood: kept so the second pass (over the same bytes) reads it exactly as the first. */
export interface TableLayout {
  delimiter: string;
  header: string[] | undefined;
  /** 0-based index of the phone column. */
  column: number;
  /** Cells of the widest row, the header included: every row is written this wide, so that the added columns line up. */
  width: number;
}

/** The input file cannot be used as it is. Messages name rows and columns, never the numbers themselves. */
export class InputFileError extends Error {
  override readonly name = 'InputFileError';
}

const DELIMITERS = [',', ';', '\t', '|'];
/**
 * The words that name a phone column, whole words only (after `headerWords`): a header that merely
 * contains one (`Hotel`), or says `number` (`Account Number`, `Número de documento`), names no phone.
 */
const PHONE_WORDS = new Set([
  ...['phone', 'phones', 'telephone', 'telephones', 'tel', 'tels', 'tfno', 'tlf', 'fono'],
  ...['phonenumber', 'phonenumbers', 'cellphone', 'cellphones', 'mobilephone', 'mobilenumber'],
  ...['mobile', 'mobiles', 'cell', 'cells', 'cellular', 'msisdn', 'whatsapp'],
  ...['telefono', 'telefonos', 'celular', 'celulares', 'movil', 'moviles'],
  ...['telefone', 'telefones', 'telemovel', 'telefon', 'telephonique'],
]);
const digits = (cell: string) => (cell.match(/\d/g) ?? []).length;

/** A header cell's words: accents dropped, camelCase and any non-letter split, lower case. */
export function headerWords(name: string): string[] {
  return name
    .normalize('NFD')
    .replace(/\p{M}/gu, '')
    .replace(/([a-z])([A-Z])/g, '$1 $2')
    .toLowerCase()
    .split(/[^a-z]+/)
    .filter((w) => w.length > 0);
}

/** The header cell names a phone column: one of its words is a phone word (`Teléfono móvil`, `phone_1`), or all of them together are (`WhatsApp`). */
export function namesPhone(name: string): boolean {
  const words = headerWords(name);
  return words.some((w) => PHONE_WORDS.has(w)) || PHONE_WORDS.has(words.join(''));
}

/** Header names for a message: a cell with digits (a data row read as a header) is never echoed. */
function quoteNames(names: readonly string[]): string {
  return names
    .map((n) => (/\d/.test(n) ? '(a value with digits)' : JSON.stringify(n.trim().slice(0, 40))))
    .join(', ');
}

/**
 * Longer than the service's limit of one phone input. The limit counts characters as the OpenAPI schema's
 * maxLength does: Unicode code points (an emoji is one), not UTF-16 units (`string.length`).
 */
export function isTooLong(phone: string): boolean {
  if (phone.length <= LIMITS.maxPhoneLength) return false;
  let points = 0;
  for (const _ of phone) points++;
  return points > LIMITS.maxPhoneLength;
}

/** The most frequent candidate delimiter of the first line, outside quotes; `,` when there is none. */
export function detectDelimiter(firstLine: string): string {
  const counts = new Map<string, number>();
  let quoted = false;
  for (const ch of firstLine) {
    if (ch === '"') quoted = !quoted;
    else if (!quoted && DELIMITERS.includes(ch)) counts.set(ch, (counts.get(ch) ?? 0) + 1);
  }
  let best = ',';
  let most = 0;
  for (const d of DELIMITERS) {
    if ((counts.get(d) ?? 0) > most) {
      best = d;
      most = counts.get(d) ?? 0;
    }
  }
  return best;
}

/**
 * A first row is taken for a header only when one of its cells names a phone column and none looks like
 * a phone number (5 digits or more). Anything else is data: a first row that is no header (`n/a`, a name)
 * is then checked and answered like every row (an `invalid` input at worst), never dropped unseen.
 * `--header` / `--no-header` say it when the guess is wrong.
 */
export function looksLikeHeader(row: readonly string[]): boolean {
  return row.every((cell) => digits(cell) < 5) && row.some(namesPhone);
}

/**
 * The phone column: by name or number when given; else the only column, or the one column the header
 * names like a phone, or, without a header, the one cell of the first row with 5 digits or more. Any
 * doubt (none, or several) is an error that asks for `--column`: a column guessed wrong (an ID or an
 * account number read as the phones) would answer every row for a number that is not its phone.
 */
export function chooseColumn(
  first: readonly string[],
  header: boolean,
  column: string | number | undefined,
): number {
  if (typeof column === 'number') {
    if (column > first.length) {
      throw new InputFileError(`--column ${column}: the first row has ${first.length} column(s)`);
    }
    return column - 1;
  }
  if (typeof column === 'string') {
    if (!header) throw new InputFileError(`--column ${column}: the file has no header row (use a number)`);
    const wanted = column.trim().toLowerCase();
    const index = first.findIndex((name) => name.trim().toLowerCase() === wanted);
    if (index < 0) {
      // A file without a header has numbers in its first row: a cell with digits is never echoed.
      throw new InputFileError(
        `no column named ${JSON.stringify(column)}; the header has ${quoteNames(first)}`,
      );
    }
    return index;
  }
  if (first.length === 1) return 0;
  const candidates = first.flatMap((cell, i) => ((header ? namesPhone(cell) : digits(cell) >= 5) ? [i] : []));
  if (candidates.length === 1) return candidates[0]!;
  if (header && candidates.length > 1) {
    const named = quoteNames(candidates.map((i) => first[i]!));
    throw new InputFileError(`several columns are named like phones (${named}): use --column NAME|N`);
  }
  throw new InputFileError(
    header
      ? 'cannot tell which column holds the phone numbers: use --column NAME|N'
      : 'cannot tell which column holds the phone numbers (no header row names one): use --column N, and --header if the first row names the columns',
  );
}

function csvOptions(delimiter: string): CsvOptions {
  return { delimiter, bom: true, relax_column_count: true, skip_empty_lines: true };
}

function csvError(error: unknown): Error {
  if (error instanceof CsvError) {
    // csv-parse's own message quotes the field: keep the numbers out of the terminal.
    const line = (error as CsvError & { lines?: number }).lines;
    return new InputFileError(`not valid CSV near line ${line ?? '?'} (${error.code})`);
  }
  return error as Error;
}

/** 64 KiB pieces of the file's bytes, as a file stream gives them: the parser holds the records of one piece at a time. */
function* pieces(bytes: Buffer): Generator<Buffer> {
  for (let at = 0; at < bytes.length; at += 65_536) yield bytes.subarray(at, at + 65_536);
}

/** Records of a CSV/TSV file's bytes, parsed as they are needed. */
export async function* records(bytes: Buffer, delimiter: string): AsyncGenerator<string[]> {
  const parser = Readable.from(pieces(bytes)).pipe(parse(csvOptions(delimiter)));
  try {
    for await (const record of parser) yield record as string[];
  } catch (error) {
    throw csvError(error);
  } finally {
    parser.destroy();
  }
}

/**
 * First pass over a CSV/TSV file's bytes: decides the header and the phone column, and keeps only the phone
 * cell of each data row (the output's pass parses the same bytes again).
 */
export async function readTable(
  bytes: Buffer,
  firstLine: string,
  options: TableOptions,
): Promise<{ phones: string[]; layout: TableLayout }> {
  const delimiter = options.delimiter ?? (options.inputFormat === 'tsv' ? '\t' : detectDelimiter(firstLine));
  const phones: string[] = [];
  let layout: TableLayout | undefined;
  let row = 0;
  for await (const record of records(bytes, delimiter)) {
    row++;
    if (layout !== undefined) layout.width = Math.max(layout.width, record.length);
    if (layout === undefined) {
      const header = options.header ?? (typeof options.column === 'string' ? true : looksLikeHeader(record));
      layout = {
        delimiter,
        header: header ? record : undefined,
        column: chooseColumn(record, header, options.column),
        width: record.length,
      };
      if (header) continue;
    }
    const phone = record[layout.column] ?? '';
    if (isTooLong(phone)) {
      throw new InputFileError(
        `row ${row}: the phone cell has more than ${LIMITS.maxPhoneLength} characters (the service refuses it)`,
      );
    }
    if (phones.length === LIMITS.v2MaxInputs) {
      throw new InputFileError(
        `the file holds more than ${LIMITS.v2MaxInputs} rows; at most that many per job`,
      );
    }
    phones.push(phone);
  }
  if (layout === undefined || phones.length === 0)
    throw new InputFileError('the file holds no phone numbers');
  return { phones, layout };
}
