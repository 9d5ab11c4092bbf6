import { parseArgs } from 'node:util';
import { COUNTRY_CODES, type CountryCode } from '@dnc/api-contract/limits';

export const USAGE = `Usage:
  dnc scrub --country <cc> <file> [--out <result.json>] [--idempotency-key <key>]
  dnc jobs get <job_id>
  dnc jobs result <job_id> [--out <result.json>]
  dnc jobs cancel <job_id>

<file> holds a JSON array of strings, or one number per line ("-" reads stdin).
Up to 10,000 numbers use the synchronous v1 API; more (up to 500,000) run as a v2 job.
Countries: ${COUNTRY_CODES.join(', ')}.

Environment: DNC_API_KEY (required), DNC_BASE_URL (default http://127.0.0.1:8080).

"safe" means only: not found in the selected registry at the time of the check. It is not consent,
not reachability, and not compliance with other calling rules such as calling hours.`;

export type Command =
  | { kind: 'help' }
  | { kind: 'scrub'; country: CountryCode; file: string; out?: string; idempotencyKey?: string }
  | { kind: 'jobs'; action: 'get' | 'cancel'; id: string }
  | { kind: 'jobs'; action: 'result'; id: string; out?: string };

/** A mistake in how the command was called: reported with the usage, exit status 2. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

const JOB_ACTIONS = ['get', 'result', 'cancel'] as const;

export function parseCommand(argv: readonly string[]): Command {
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(argv);
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  const { values, positionals } = parsed;
  if (values.help || positionals.length === 0 || positionals[0] === 'help') return { kind: 'help' };

  const [name, ...rest] = positionals;
  if (name === 'scrub') {
    if (values.country === undefined) throw new UsageError('scrub needs --country');
    const country = values.country.toLowerCase();
    if (!(COUNTRY_CODES as readonly string[]).includes(country)) {
      throw new UsageError(`unknown country '${values.country}' (one of ${COUNTRY_CODES.join(', ')})`);
    }
    if (rest.length !== 1) throw new UsageError('scrub needs exactly one input file');
    const command: Command = { kind: 'scrub', country: country as CountryCode, file: rest[0] as string };
    if (values.out !== undefined) command.out = values.out;
    if (values['idempotency-key'] !== undefined) command.idempotencyKey = values['idempotency-key'];
    return command;
  }
  if (name === 'jobs') {
    const [action, id, ...extra] = rest;
    if (!(JOB_ACTIONS as readonly (string | undefined)[]).includes(action)) {
      throw new UsageError(`jobs needs one of ${JOB_ACTIONS.join(', ')}`);
    }
    if (!id || extra.length > 0) throw new UsageError(`jobs ${action} needs exactly one job id`);
    if (values.country !== undefined || values['idempotency-key'] !== undefined) {
      throw new UsageError(`jobs ${action} takes no --country or --idempotency-key`);
    }
    if (action === 'result')
      return values.out === undefined
        ? { kind: 'jobs', action, id }
        : { kind: 'jobs', action, id, out: values.out };
    if (values.out !== undefined) throw new UsageError(`jobs ${action} takes no --out`);
    return { kind: 'jobs', action: action as 'get' | 'cancel', id };
  }
  throw new UsageError(`unknown command '${name}'`);
}

function parse(argv: readonly string[]) {
  return parseArgs({
    args: [...argv],
    allowPositionals: true,
    strict: true,
    options: {
      country: { type: 'string', short: 'c' },
      out: { type: 'string', short: 'o' },
      'idempotency-key': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
}
