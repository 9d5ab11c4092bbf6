import { parseArgs } from 'node:util';
import type { Transport } from '@connectrpc/connect';
import {
  ConfigError,
  createSecurity,
  grpcTransport,
  type Identity,
  parseConfig,
  readPublicReason,
  type Security,
  securityConfig,
  z,
} from '@dnc/kit';

/** Where the services' admin listeners are, and who is calling. */
export interface AdminEnv {
  admission: string;
  quota: string;
  jobs: string;
  dashboard: string;
  /** The operator's certificate (DNC_TLS_DIR), read when the first call is made. */
  security(): Security;
}

/**
 * dnc-admin authenticates as the `operator` identity: a certificate of the platform CA naming
 * spiffe://<trust domain>/operator, in DNC_TLS_DIR (tls.crt, tls.key, ca.crt). Without one it
 * refuses to run, unless DNC_INSECURE_PLAINTEXT=1 (development only, logged).
 */
export function adminEnv(env: NodeJS.ProcessEnv = process.env): AdminEnv {
  let security: Security | undefined;
  return {
    // The admin listeners (administrative services, audit log); the data-plane address as a fallback.
    admission: env['DNC_ADMISSION_ADMIN_ADDR'] ?? env['DNC_ADMISSION_ADDR'] ?? 'http://127.0.0.1:50051',
    quota: env['DNC_QUOTA_ADMIN_ADDR'] ?? env['DNC_QUOTA_ADDR'] ?? 'http://127.0.0.1:50052',
    jobs: env['DNC_JOBS_ADMIN_ADDR'] ?? env['DNC_JOBS_ADDR'] ?? 'http://127.0.0.1:50053',
    dashboard: env['DNC_DASHBOARD_ADDR'] ?? 'http://127.0.0.1:50054',
    security() {
      if (!security) {
        try {
          security = createSecurity(parseConfig(z.object(securityConfig), env), 'operator');
        } catch (error) {
          if (error instanceof ConfigError) throw new UsageError(error.message);
          throw new UsageError(`the operator certificate: ${(error as Error).message}`);
        }
      }
      return security;
    },
  };
}

/**
 * A gRPC transport to `address`, as the operator, accepting only a server that proves `peer`. Without
 * the session probe (kit `TransportOptions`): a registry load is one long upload that reads nothing
 * until it ends.
 */
export function operatorTransport(env: AdminEnv, address: string, peer: Identity): Transport {
  return grpcTransport(address, [], { security: env.security(), peer }, { probe: false });
}

/** A failure the operator can act on: printed as one line on stderr, exit code 1. */
export class UsageError extends Error {}

export type Flags = Record<string, string | boolean | undefined>;

export interface Command {
  /** e.g. `org create` */
  name: string;
  usage: string;
  options: Record<string, { type: 'string' | 'boolean' }>;
  run(flags: Flags, env: AdminEnv, positionals: string[]): Promise<unknown>;
}

export function requireFlag(flags: Flags, name: string): string {
  const v = flags[name];
  if (typeof v !== 'string' || v === '') throw new UsageError(`--${name} is required`);
  return v;
}

export function intFlag(flags: Flags, name: string, min: number, max: number): number | undefined {
  const v = flags[name];
  if (v === undefined) return undefined;
  const n = Number(v);
  if (typeof v !== 'string' || !Number.isInteger(n) || n < min || n > max) {
    throw new UsageError(`--${name} must be an integer from ${min} to ${max}`);
  }
  return n;
}

/** An ISO 8601 time with its zone (a time without one would be read in the operator's local zone). */
const ISO_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/;

/**
 * A time flag: ISO 8601 with its zone, e.g. 2026-12-01T06:00:00Z; refused without one, and refused when
 * its calendar fields are not a real time: V8 reads 2026-02-30 as March 2 and T24:00 as the next day, and a
 * mistyped --as-of of a removal would have passed for a later one (a review, 2026-12-05).
 */
export function timeFlag(flags: Flags, name: string): Date | undefined {
  const v = flags[name];
  if (v === undefined) return undefined;
  const at = typeof v === 'string' && ISO_TIME.test(v) ? new Date(v) : undefined;
  if (!at || Number.isNaN(at.getTime()) || !realFields(v as string))
    throw new UsageError(`--${name} must be an ISO 8601 time with its zone, e.g. 2026-12-01T06:00:00Z`);
  return at;
}

/** Month 1-12, a day the month has, hour 0-23, minute and second 0-59. */
function realFields(v: string): boolean {
  const [y, mo, d, h, mi, s] = (v.match(/\d+/g) ?? []).map(Number);
  const days = new Date(Date.UTC(y!, mo!, 0)).getUTCDate();
  return mo! >= 1 && mo! <= 12 && d! >= 1 && d! <= days && h! <= 23 && mi! <= 59 && (s ?? 0) <= 59;
}

export async function runCli(argv: string[], commands: Command[]): Promise<number> {
  const words = argv.filter((a) => !a.startsWith('-'));
  const command =
    commands.find((c) => c.name === `${words[0]} ${words[1]}`) ?? commands.find((c) => c.name === words[0]);
  if (!command) {
    process.stderr.write(
      `dnc-admin: unknown command. Commands:\n${commands.map((c) => `  ${c.usage}`).join('\n')}\n`,
    );
    return 2;
  }
  const rest = argv.slice(argv.indexOf(command.name.split(' ').at(-1)!) + 1);
  try {
    const { values, positionals } = parseArgs({
      args: rest,
      options: command.options,
      allowPositionals: true,
    });
    const result = await command.run(values, adminEnv(), positionals);
    process.stdout.write(`${JSON.stringify(result, jsonBigint, 2)}\n`);
    return 0;
  } catch (error) {
    process.stderr.write(`dnc-admin: ${describe(error)}\n`);
    return 1;
  }
}

function jsonBigint(_key: string, value: unknown): unknown {
  return typeof value === 'bigint' ? Number(value) : value;
}

function describe(error: unknown): string {
  if (error instanceof UsageError) return error.message;
  const reason = readPublicReason(error);
  if (reason) return reason.message ? `${reason.reason}: ${reason.message}` : reason.reason;
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code;
    // Connection refused and the like: name the service address, not a stack trace.
    if (typeof code === 'number' && code === 14) return `service unavailable (${error.message})`;
    return error.message.split('\n')[0] ?? 'failed';
  }
  return String(error);
}
