import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { adapterCallLines, adapterCallViolations } from './invariant-checks/adapter-calls.js';
import { jobViolations, transitionViolations } from './invariant-checks/jobs.js';
import { logLeaks, natsLeaks, postgresLeaks, redisLeaks } from './invariant-checks/leaks.js';
import { idempotencyViolations, ledgerViolations, settlementViolations } from './invariant-checks/money.js';
import type { Stack } from './stack.js';

/**
 * The invariant checker (issue 14): what must hold in the stores of a stack once it has drained,
 * whatever faults it went through. It reads the real stores — Postgres (jobs, quota ledger,
 * idempotency), NATS (streams and buckets), Redis — and the processes' logs, never a test's memory of
 * what it did. Fault tests call it after every test; the chaos suite calls it from a script.
 *
 *   job_terminal            every accepted job is terminal after the drain, and reached it once
 *   job_result              a complete result only for a succeeded job (at most one), none after its purge
 *   input_purged            no input ciphertext or data key for a terminal job
 *   quota_reserved          nothing reserved: every reservation ended in commit or release
 *   quota_used              `used` = committed amounts = usage records, one record per commit
 *   job_settled             a succeeded job charged its submitted count once, any other outcome nothing
 *   one_job_per_key         every job belongs to an accepted idempotency claim; no v2 admission unresolved
 *   one_charge_per_request  a completed v1 request charged once; no v1 charge without a completed request
 *   adapter_calls           each unit called at most its retries per execution attempt
 *   no_plaintext            no canary number in Postgres, NATS, Redis or the logs; no API key in the logs
 *
 * A violation names ids, states and counts only: never a phone number, a key or a body.
 */
export type InvariantName =
  | 'job_terminal'
  | 'job_result'
  | 'input_purged'
  | 'quota_reserved'
  | 'quota_used'
  | 'job_settled'
  | 'one_job_per_key'
  | 'one_charge_per_request'
  | 'adapter_calls'
  | 'no_plaintext';

export interface Violation {
  invariant: InvariantName;
  detail: string;
}

export interface InvariantTarget {
  /** The stack's database: the schemas admission, quota and jobs (each checked when present). */
  databaseUrl: string;
  natsUrl?: string;
  /** The prefix of the stack's streams and buckets. */
  natsPrefix?: string;
  redisUrl?: string;
  /** The prefix of the stack's Redis keys (DNC_REDIS_PREFIX). */
  redisPrefix?: string;
  /** Each process's output, or the directory of `<process>.log` files a stack writes. */
  logs?: { source: string; text: string }[] | { dir: string };
  /** Phone numbers (as written and as digits) that must be found nowhere in plaintext. */
  canaries?: readonly string[];
}

export interface CheckOptions {
  /**
   * Keep looking for this long while the stores still violate an invariant: jobs draining, settlements
   * and reconcilers not yet run. Leaks are searched once, at the end.
   */
  settleMs?: number;
  /** Invariants not to check (a test that leaves work in flight on purpose says which). */
  skip?: readonly InvariantName[];
}

function readLogs(logs: InvariantTarget['logs']): { source: string; text: string }[] {
  if (!logs) return [];
  if (Array.isArray(logs)) return logs;
  const { dir } = logs as { dir: string };
  return readdirSync(dir)
    .filter((f) => f.endsWith('.log'))
    .map((f) => ({ source: f.replace(/\.log$/, ''), text: readFileSync(path.join(dir, f), 'utf8') }));
}

async function hasSchema(db: pg.Client, table: string): Promise<boolean> {
  const r = await db.query<{ t: string | null }>('SELECT to_regclass($1)::text AS t', [table]);
  return r.rows[0]?.t !== null;
}

/** The invariants over the stores, once. */
async function storeViolations(
  db: pg.Client,
  logs: { source: string; text: string }[],
): Promise<Violation[]> {
  const jobs = await hasSchema(db, 'jobs.jobs');
  const quota = await hasSchema(db, 'quota.reservations');
  const admission = await hasSchema(db, 'admission.idempotency_records');
  const out: Violation[] = [];
  if (jobs) out.push(...(await jobViolations(db)), ...(await transitionViolations(db)));
  if (quota) out.push(...(await ledgerViolations(db, { admission, jobs })));
  if (jobs && quota) out.push(...(await settlementViolations(db)));
  if (admission && quota) out.push(...(await idempotencyViolations(db, jobs)));
  if (jobs) {
    const r = await db.query<{ id: string; attempts: number }>('SELECT id, attempts FROM jobs.jobs');
    const attempts = new Map(r.rows.map((x) => [x.id, x.attempts]));
    out.push(...adapterCallViolations(adapterCallLines(logs), attempts));
  }
  return out;
}

/** Every violation of the stack's stores (empty when all hold). */
export async function checkInvariants(
  target: InvariantTarget,
  options: CheckOptions = {},
): Promise<Violation[]> {
  const skip = new Set(options.skip ?? []);
  const keep = (v: Violation[]) => v.filter((x) => !skip.has(x.invariant));
  const db = new pg.Client({ connectionString: target.databaseUrl, connectionTimeoutMillis: 5_000 });
  await db.connect();
  try {
    const deadline = Date.now() + (options.settleMs ?? 0);
    let found: Violation[];
    for (;;) {
      found = keep(await storeViolations(db, readLogs(target.logs)));
      if (found.length === 0 || Date.now() >= deadline) break;
      await new Promise((r) => setTimeout(r, 250));
    }
    if (skip.has('no_plaintext')) return found;
    const canaries = target.canaries ?? [];
    found.push(...(await postgresLeaks(db, canaries)));
    if (target.natsUrl && target.natsPrefix)
      found.push(...(await natsLeaks(target.natsUrl, target.natsPrefix, canaries)));
    if (target.redisUrl && target.redisPrefix)
      found.push(...(await redisLeaks(target.redisUrl, target.redisPrefix, canaries)));
    found.push(...logLeaks(readLogs(target.logs), canaries));
    return found;
  } finally {
    await db.end();
  }
}

/** What the checker reads of a running stack: its database, NATS prefix, Redis prefix and logs. */
export function stackTarget(stack: Stack, canaries: readonly string[] = []): InvariantTarget {
  const env = stack.commonEnv;
  return {
    databaseUrl: stack.options.databaseUrl,
    natsUrl: stack.options.natsUrl,
    natsPrefix: stack.options.natsPrefix ?? '',
    redisUrl: stack.options.redisUrl,
    redisPrefix: env['DNC_REDIS_PREFIX'] ?? '',
    logs: [...stack.processes.keys()].map((name) => ({ source: name, text: stack.logsOf(name) })),
    canaries,
  };
}

/** One line per violation, for a test failure or a script's output. */
export function formatViolations(violations: readonly Violation[]): string {
  return violations.map((v) => `${v.invariant}: ${v.detail}`).join('\n');
}
