import { parseArgs } from 'node:util';
import { COUNTRY_CODES, type Country, IDEMPOTENCY_KEY_PATTERN } from '@dnc-scrub/sdk';
import type { HelpTopic } from './help.js';
import type { TableOptions } from './table.js';

export type OutputFormat = 'csv' | 'json' | 'ndjson';
export const OUTPUT_FORMATS: readonly OutputFormat[] = ['csv', 'json', 'ndjson'];

export interface Connection {
  apiKeyFile?: string;
  baseUrl?: string;
}

export interface ScrubCommand extends Connection {
  kind: 'scrub';
  country: Country;
  file: string;
  table: TableOptions;
  format?: OutputFormat;
  out?: string;
  idempotencyKey?: string;
  detach: boolean;
}

export interface JobsCommand extends Connection {
  kind: 'jobs';
  action: 'get' | 'wait' | 'cancel' | 'result';
  id: string;
  /** result only */
  out?: string;
  format?: OutputFormat;
  input?: string;
  table?: TableOptions;
}

export type Command = { kind: 'help'; topic: HelpTopic } | { kind: 'version' } | ScrubCommand | JobsCommand;

/** A mistake in how the command was called: reported with the usage, exit status 2. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
  constructor(
    message: string,
    readonly topic: HelpTopic = 'main',
  ) {
    super(message);
  }
}

const JOB_ACTIONS = ['get', 'wait', 'result', 'cancel'] as const;
const INPUT_FORMATS = ['json', 'lines', 'csv', 'tsv'] as const;

const OPTIONS = {
  country: { type: 'string', short: 'c' },
  out: { type: 'string', short: 'o' },
  format: { type: 'string', short: 'f' },
  column: { type: 'string' },
  delimiter: { type: 'string' },
  header: { type: 'boolean' },
  'no-header': { type: 'boolean' },
  'input-format': { type: 'string' },
  input: { type: 'string', short: 'i' },
  detach: { type: 'boolean' },
  'idempotency-key': { type: 'string' },
  'api-key-file': { type: 'string' },
  'base-url': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
  version: { type: 'boolean', short: 'V' },
} as const;

type Values = ReturnType<typeof parse>['values'];
type OptionName = keyof typeof OPTIONS;
const TABLE_FLAGS: OptionName[] = ['column', 'delimiter', 'header', 'no-header', 'input-format'];

function parse(argv: readonly string[]) {
  return parseArgs({ args: [...argv], allowPositionals: true, strict: true, options: OPTIONS });
}

function refuse(values: Values, names: OptionName[], what: string, topic: HelpTopic): void {
  for (const name of names) {
    if (values[name] !== undefined) throw new UsageError(`${what} takes no --${name}`, topic);
  }
}

function connection(values: Values): Connection {
  const out: Connection = {};
  if (values['api-key-file'] !== undefined) out.apiKeyFile = values['api-key-file'];
  if (values['base-url'] !== undefined) out.baseUrl = values['base-url'];
  return out;
}

function format(values: Values, topic: HelpTopic): OutputFormat | undefined {
  const value = values.format;
  if (value === undefined) return undefined;
  if (!(OUTPUT_FORMATS as readonly string[]).includes(value)) {
    throw new UsageError(`--format must be one of ${OUTPUT_FORMATS.join(', ')}`, topic);
  }
  return value as OutputFormat;
}

function delimiter(value: string | undefined, topic: HelpTopic): string | undefined {
  if (value === undefined) return undefined;
  const d = value === '\\t' || value.toLowerCase() === 'tab' ? '\t' : value;
  if (d.length !== 1 || d === '"' || d === '\r' || d === '\n') {
    throw new UsageError(
      '--delimiter must be one character (not a quote or a line break); "\\t" for tab',
      topic,
    );
  }
  return d;
}

function table(values: Values, topic: HelpTopic): TableOptions {
  if (values.header && values['no-header'])
    throw new UsageError('--header and --no-header exclude each other', topic);
  const options: TableOptions = {};
  const inputFormat = values['input-format'];
  if (inputFormat !== undefined) {
    if (!(INPUT_FORMATS as readonly string[]).includes(inputFormat)) {
      throw new UsageError(`--input-format must be one of ${INPUT_FORMATS.join(', ')}`, topic);
    }
    options.inputFormat = inputFormat as TableOptions['inputFormat'] & string;
  }
  const d = delimiter(values.delimiter, topic);
  if (d !== undefined) options.delimiter = d;
  if (values.header) options.header = true;
  if (values['no-header']) options.header = false;
  if (values.column !== undefined) {
    if (values.column.trim() === '') throw new UsageError('--column needs a name or a number', topic);
    options.column = /^\d+$/.test(values.column) ? Number(values.column) : values.column;
    if (options.column === 0) throw new UsageError('--column counts from 1', topic);
  }
  return options;
}

function scrubCommand(values: Values, rest: string[]): ScrubCommand {
  if (values.country === undefined) throw new UsageError('scrub needs --country', 'scrub');
  const country = values.country.toLowerCase();
  if (!(COUNTRY_CODES as readonly string[]).includes(country)) {
    throw new UsageError(`unknown country '${values.country}' (one of ${COUNTRY_CODES.join(', ')})`, 'scrub');
  }
  if (rest.length !== 1) throw new UsageError('scrub needs exactly one input file', 'scrub');
  refuse(values, ['input'], 'scrub', 'scrub');
  const command: ScrubCommand = {
    kind: 'scrub',
    country: country as Country,
    file: rest[0] as string,
    table: table(values, 'scrub'),
    detach: values.detach === true,
    ...connection(values),
  };
  const f = format(values, 'scrub');
  if (f !== undefined) command.format = f;
  if (values.out !== undefined) command.out = values.out;
  const key = values['idempotency-key'];
  if (key !== undefined) {
    if (!new RegExp(IDEMPOTENCY_KEY_PATTERN).test(key))
      throw new UsageError('--idempotency-key: 1 to 255 visible ASCII characters, no spaces', 'scrub');
    command.idempotencyKey = key;
  }
  if (command.detach) refuse(values, ['out', 'format'], 'scrub --detach', 'scrub');
  return command;
}

function jobsCommand(values: Values, rest: string[]): JobsCommand {
  const [action, id, ...extra] = rest;
  if (!(JOB_ACTIONS as readonly (string | undefined)[]).includes(action)) {
    throw new UsageError(`jobs needs one of ${JOB_ACTIONS.join(', ')}`, 'jobs');
  }
  if (!id || extra.length > 0) throw new UsageError(`jobs ${action} needs exactly one job id`, 'jobs');
  refuse(values, ['country', 'idempotency-key', 'detach'], `jobs ${action}`, 'jobs');
  const command: JobsCommand = {
    kind: 'jobs',
    action: action as JobsCommand['action'],
    id,
    ...connection(values),
  };
  if (action !== 'result') {
    refuse(values, ['out', 'format', 'input', ...TABLE_FLAGS], `jobs ${action}`, 'jobs');
    return command;
  }
  const f = format(values, 'jobs');
  if (values.out !== undefined) command.out = values.out;
  if (values.input !== undefined) {
    command.input = values.input;
    command.table = table(values, 'jobs');
  } else refuse(values, TABLE_FLAGS, 'jobs result without --input', 'jobs');
  if (f !== undefined && f !== 'json' && command.input === undefined) {
    throw new UsageError(`jobs result --format ${f} needs --input (the file that was submitted)`, 'jobs');
  }
  if (f !== undefined) command.format = f;
  return command;
}

export function parseCommand(argv: readonly string[]): Command {
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(argv);
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  const { values, positionals } = parsed;
  const [name, ...rest] = positionals;
  if (values.version) return { kind: 'version' };
  if (name === 'help' || name === undefined) {
    const topic = rest[0] === 'scrub' || rest[0] === 'jobs' ? rest[0] : 'main';
    return { kind: 'help', topic };
  }
  if (name !== 'scrub' && name !== 'jobs') throw new UsageError(`unknown command '${name}'`);
  if (values.help) return { kind: 'help', topic: name };
  return name === 'scrub' ? scrubCommand(values, rest) : jobsCommand(values, rest);
}

/** One argument as a POSIX shell reads it back: quoted unless it is plainly one word. */
function shellWord(arg: string): string {
  return /^[\w@%+=:,./-]+$/.test(arg) ? arg : `'${arg.replaceAll("'", `'\\''`)}'`;
}

/**
 * The `dnc jobs result` command that writes what this scrub command would have: the same file, read with
 * the same table options, the same format and output, from the same service with the same key (a job of
 * another organization, or of another service, is not found). Every value is joined to its option
 * (`--input=-rows.csv`): `--input -rows.csv` is refused as ambiguous by the parser, and the command printed
 * did not run (found by a review, 2026-12-05).
 */
export function resultCommand(command: ScrubCommand, jobId: string): string {
  const args = ['dnc', 'jobs', 'result', jobId, `--input=${command.file}`];
  const { inputFormat, delimiter, header, column } = command.table;
  if (inputFormat !== undefined) args.push(`--input-format=${inputFormat}`);
  if (delimiter !== undefined) args.push(`--delimiter=${delimiter === '\t' ? 'tab' : delimiter}`);
  if (header !== undefined) args.push(header ? '--header' : '--no-header');
  if (column !== undefined) args.push(`--column=${column}`);
  if (command.format !== undefined) args.push(`--format=${command.format}`);
  if (command.out !== undefined) args.push(`--out=${command.out}`);
  if (command.apiKeyFile !== undefined) args.push(`--api-key-file=${command.apiKeyFile}`);
  if (command.baseUrl !== undefined) args.push(`--base-url=${command.baseUrl}`);
  return args.map(shellWord).join(' ');
}
