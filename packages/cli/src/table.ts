import { createReadStream } from 'node:fs';
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

/** A CSV/TSV file as it was understood: kept so the second pass reads it exactly as the first. */
export interface TableLayout {
  delimiter: string;
  header: string[] | undefined;
  /** 0-based index of the phone column. */
  column: number;
}

/** The input file cannot be used as it is. Messages name rows and columns, never the numbers themselves. */
export class InputFileError extends Error {
  override readonly name = 'InputFileError';
}

const DELIMITERS = [',', ';', '\t', '|'];
const PHONE_HEADER = /phone|tel|mobile|cell|number|n[uú]mero|celular|m[oó]vil|whatsapp/i;
const digits = (cell: string) => (cell.match(/\d/g) ?? []).length;

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

/** A first row is a header when none of its cells looks like a phone number (5 digits or more). */
export function looksLikeHeader(row: readonly string[]): boolean {
  return row.every((cell) => digits(cell) < 5);
}

/** The phone column: by name or number when given, else the header named like a phone, else the first cell with digits. */
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
      const names = first
        .map((n) => (/\d/.test(n) ? '(a value with digits)' : JSON.stringify(n.trim().slice(0, 40))))
        .join(', ');
      throw new InputFileError(`no column named ${JSON.stringify(column)}; the header has ${names}`);
    }
    return index;
  }
  if (first.length === 1) return 0;
  const index = header
    ? first.findIndex((name) => PHONE_HEADER.test(name))
    : first.findIndex((c) => digits(c) >= 5);
  if (index < 0) {
    throw new InputFileError('cannot tell which column holds the phone numbers: use --column NAME|N');
  }
  return index;
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

/** Records of a CSV/TSV file, streamed. */
export async function* records(path: string, delimiter: string): AsyncGenerator<string[]> {
  const parser = createReadStream(path).pipe(parse(csvOptions(delimiter)));
  try {
    for await (const record of parser) yield record as string[];
  } catch (error) {
    throw csvError(error);
  } finally {
    parser.destroy();
  }
}

/**
 * First pass over a CSV/TSV file: decides the header and the phone column, and keeps only the phone cell of
 * each data row (memory grows with the numbers, not with the other columns).
 */
export async function readTable(
  path: string,
  firstLine: string,
  options: TableOptions,
): Promise<{ phones: string[]; layout: TableLayout }> {
  const delimiter = options.delimiter ?? (options.inputFormat === 'tsv' ? '\t' : detectDelimiter(firstLine));
  const phones: string[] = [];
  let layout: TableLayout | undefined;
  let row = 0;
  for await (const record of records(path, delimiter)) {
    row++;
    if (layout === undefined) {
      const header = options.header ?? (typeof options.column === 'string' ? true : looksLikeHeader(record));
      layout = {
        delimiter,
        header: header ? record : undefined,
        column: chooseColumn(record, header, options.column),
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
