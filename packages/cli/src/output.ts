import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { createWriteStream, fchmod } from 'node:fs';
import { chmod, copyFile, open, realpath, rename, rm, stat } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { stringify } from 'csv-stringify';
import type { OutputFormat } from './args.js';
import type { PhoneInput } from './input.js';
import { type Outcomes, STATUS_NAMES } from './outcome.js';
import { records } from './table.js';

/** Where output goes: a process stream, a file stream, or a test's collector. */
export interface Sink {
  write(chunk: string): unknown;
  once?(event: 'drain', listener: () => void): unknown;
}

/** Writes with backpressure when the sink has it (a full pipe waits instead of buffering the whole output). */
async function put(sink: Sink, chunk: string): Promise<void> {
  const stream = sink as Sink & { destroyed?: boolean; errored?: Error | null };
  // A file that failed (a full disk) is destroyed: it takes nothing more and never drains.
  if (stream.destroyed) throw stream.errored ?? new Error('the output was closed');
  if (sink.write(chunk) === false && sink.once) {
    const emitter = sink as unknown as NodeJS.EventEmitter;
    await new Promise<void>((resolve, reject) => {
      const settle = (error?: Error) => {
        emitter.off('drain', onDrain);
        emitter.off('close', onClose);
        if (error) reject(error);
        else resolve();
      };
      const onDrain = () => settle();
      const onClose = () => settle(stream.errored ?? new Error('the output was closed'));
      emitter.on('drain', onDrain);
      emitter.on('close', onClose);
    });
  }
}

/** Where a file beside the output cannot be made, the output is written in place (as before). */
const CANNOT_CREATE = new Set(['EACCES', 'EPERM', 'EROFS']);
/** Where a file cannot be renamed over the output (a file bind-mounted alone), it is copied over it. */
const CANNOT_RENAME = new Set(['EBUSY', 'EXDEV']);

/**
 * Runs `write` against stdout, or against a file readable by the owner only (results hold numbers). A regular
 * file (or a new one) is written whole or not at all: into `<name>.<random>.partial` beside it, renamed over it
 * once complete, so a failure part-way (a full disk) leaves the previous file as it was
 * and no partial result under its name (the partial file is removed; a process killed outright leaves it,
 * visible beside the output). A link is followed: the file it names is replaced. Anything else
 * (`/dev/stdout`, a pipe) is written in place, and so is a file in a directory where no file can be made.
 */
export async function toDestination(
  stdout: Sink,
  out: string | undefined,
  write: (sink: Sink) => Promise<void>,
  /** The input file: never written over in place, where a failure part-way would leave it neither list nor result. */
  source?: string,
): Promise<void> {
  if (out === undefined) return write(stdout);
  const existing = await stat(out).catch(() => undefined);
  if (existing && !existing.isFile()) return writeFile(out, 'w', write);
  const target = existing ? await realpath(out) : out;
  const partial = join(dirname(target), `${basename(target)}.${randomBytes(6).toString('hex')}.partial`);
  const made = await open(partial, 'wx', 0o600).then(
    (handle) => handle.close().then(() => undefined),
    (error: NodeJS.ErrnoException) => error,
  );
  if (made) {
    if (existing && CANNOT_CREATE.has(made.code ?? '')) {
      // Found by a review (2026-12-05): in place over the input, the input was emptied before it was read.
      if (source !== undefined && (await realpath(source).catch(() => source)) === target)
        throw new Error('the output would be written over the input file in place: choose another --out');
      return writeFile(target, 'w', write);
    }
    throw made;
  }
  try {
    await writeFile(partial, 'w', write);
    await rename(partial, target).catch(async (error: NodeJS.ErrnoException) => {
      if (!CANNOT_RENAME.has(error.code ?? '')) throw error;
      await copyFile(partial, target);
      await chmod(target, 0o600);
    });
  } finally {
    await rm(partial, { force: true });
  }
}

async function writeFile(path: string, flags: string, write: (sink: Sink) => Promise<void>): Promise<void> {
  const file = createWriteStream(path, { mode: 0o600, flags });
  const [fd] = (await once(file, 'open')) as [number];
  // A failed write (a full disk) is an error of this call, not an uncaught one of the process.
  let failed: Error | undefined;
  file.on('error', (e) => {
    failed ??= e;
  });
  try {
    // The mode applies to a file created here only: an existing one readable by others is made private
    // before a number is written to it.
    await new Promise<void>((resolve, reject) => fchmod(fd, 0o600, (e) => (e ? reject(e) : resolve())));
    await write(file);
  } finally {
    file.end();
    if (!file.closed) await once(file, 'close').catch(() => {});
  }
  if (failed) throw failed;
}

export async function writeJson(sink: Sink, value: unknown): Promise<void> {
  await put(sink, `${JSON.stringify(value, null, 2)}\n`);
}

const statusOf = (outcomes: Outcomes, i: number) => STATUS_NAMES[outcomes.status[i] as 0 | 1 | 2];

async function writeNdjson(sink: Sink, input: PhoneInput, outcomes: Outcomes): Promise<void> {
  let batch = '';
  for (let i = 0; i < input.phones.length; i++) {
    const reason = outcomes.reasons.get(i);
    batch += `${JSON.stringify({
      row: i + 1,
      input: input.phones[i],
      dnc_status: statusOf(outcomes, i),
      ...(reason === undefined ? {} : { dnc_reason: reason }),
    })}\n`;
    if (batch.length > 65_536) {
      await put(sink, batch);
      batch = '';
    }
  }
  if (batch) await put(sink, batch);
}

/** The original rows of a CSV/TSV file (parsed again from the bytes read once) with dnc_status and dnc_reason added. */
async function writeCsv(sink: Sink, input: PhoneInput, outcomes: Outcomes): Promise<void> {
  const delimiter = input.table?.delimiter ?? ',';
  const stringifier = stringify({ delimiter, record_delimiter: 'unix' });
  const pump = (async () => {
    for await (const chunk of stringifier) await put(sink, String(chunk));
  })();
  const write = async (row: string[]) => {
    if (!stringifier.write(row)) await once(stringifier, 'drain');
  };
  try {
    if (input.table === undefined) {
      await write(['phone', 'dnc_status', 'dnc_reason']);
      for (let i = 0; i < input.phones.length; i++) {
        await write([input.phones[i] as string, statusOf(outcomes, i), outcomes.reasons.get(i) ?? '']);
      }
    } else {
      const { width } = input.table;
      // A short or long row (the reader keeps them) is padded to the widest: the two added columns are
      // the same for every row, under their header names (found by a review, 2026-12-05: a row short of
      // a cell had its status under the header's last column, and none under dnc_status).
      const padded = (record: string[]) =>
        record.length < width ? [...record, ...Array<string>(width - record.length).fill('')] : record;
      let headerPending = input.table.header !== undefined;
      let i = 0;
      // The same bytes, parsed with the same layout, as the numbers sent: row i is the row of input i, so
      // there is no file to have changed and no check that could fail with part of the table written.
      for await (const record of records(input.bytes, delimiter)) {
        if (headerPending) {
          headerPending = false;
          await write([...padded(record), 'dnc_status', 'dnc_reason']);
          continue;
        }
        await write([...padded(record), statusOf(outcomes, i), outcomes.reasons.get(i) ?? '']);
        i++;
      }
    }
  } finally {
    stringifier.end();
    await pump;
  }
}

export async function writeRows(
  sink: Sink,
  format: Exclude<OutputFormat, 'json'>,
  input: PhoneInput,
  outcomes: Outcomes,
): Promise<void> {
  return format === 'csv' ? writeCsv(sink, input, outcomes) : writeNdjson(sink, input, outcomes);
}
