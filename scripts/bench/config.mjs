// The bench's configuration (command line), shared by every phase module.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { COUNTRY } from './workload.mjs';

export const ROOT = path.resolve(fileURLToPath(new URL('../..', import.meta.url)));

const { values: args } = parseArgs({
  options: {
    smoke: { type: 'boolean', default: false },
    size: { type: 'string' },
    runs: { type: 'string' },
    duration: { type: 'string' },
    connections: { type: 'string' },
    job: { type: 'string' },
    'small-job': { type: 'string' },
    out: { type: 'string', default: path.join(ROOT, 'bench-results.json') },
    'keep-logs': { type: 'boolean', default: false },
  },
});

export { args };
export const smoke = args.smoke;

export const CONFIG = {
  mode: smoke ? 'smoke' : 'full',
  country: COUNTRY,
  registry_size: Number(args.size ?? (smoke ? 10_000 : 10_000_000)),
  v1_batch: 10_000,
  v1_runs: Number(args.runs ?? (smoke ? 5 : 20)),
  v1_warmup: smoke ? 2 : 5,
  check_runs: smoke ? 20 : 100,
  check_warmup: smoke ? 5 : 20,
  /** Lone one-number requests: measured after a warm-up (a serving process is warm). */
  lone_runs: smoke ? 30 : 300,
  lone_warmup: smoke ? 30 : 300,
  single_duration_s: Number(args.duration ?? (smoke ? 3 : 30)),
  single_connections: Number(args.connections ?? (smoke ? 8 : 48)),
  job_size: Number(args.job ?? (smoke ? 20_000 : 500_000)),
  /** Large jobs measured after the first one of the same size (their median is the v2 figure). */
  job_runs: smoke ? 3 : 5,
  small_job_size: Number(args['small-job'] ?? (smoke ? 5_000 : 100_000)),
  concurrent_jobs: 4,
  poll_interval_ms: 25,
  /** Seconds of each physical floor (HTTP round trips, pgbench). */
  floor_seconds: smoke ? 1 : 5,
};

export const DATABASE = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
export const REDIS = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
export const NATS = process.env.NATS_URL ?? 'nats://127.0.0.1:4222';

export const log = (line) => process.stderr.write(`bench: ${line}\n`);
export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
