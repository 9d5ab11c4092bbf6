// The floors every service figure is compared with, measured in the same run on the same machine:
// - the work itself in one process, without the service (floor.mjs, its own process);
// - what bounds any real request here (issue 18 item 6): a minimal HTTP round trip between two
//   processes (node:http server, the bench's own client) and PostgreSQL's durable commit, measured
//   with pgbench (Debian's postgresql-client) against the same server.
import { execFile, spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { CONFIG, log, ROOT, smoke } from './config.mjs';
import { autocannonRun, loadFigures } from './load.mjs';
import { now, round, summarize } from './stats.mjs';
import { body, inputs } from './workload.mjs';

const run = promisify(execFile);

/**
 * The work of a scrub in ONE process (floor.mjs as a child process, nothing else in it); with `only:
 * 'job'`, its v2 part alone (measured again right before the v2 phases, the stack up and idle).
 */
export function runFloorProcess({ only } = {}) {
  const floorArgs = [
    path.join(ROOT, 'scripts/bench/floor.mjs'),
    '--size',
    String(CONFIG.registry_size),
    '--runs',
    String(CONFIG.v1_runs),
    '--job',
    String(CONFIG.job_size),
    '--small-job',
    String(CONFIG.small_job_size),
  ];
  if (only) floorArgs.push('--only', only);
  if (smoke) floorArgs.push('--smoke');
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, floorArgs, { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (c) => {
      out += c;
    });
    child.once('exit', (code) => {
      if (code !== 0) return reject(new Error(`floor exited with ${code}`));
      resolve(JSON.parse(out));
    });
  });
}

/**
 * A minimal HTTP round trip: node:http answering a one-number body from its own process. Lone
 * requests one after another with `fetch` (the client of the lone phase), then the single-number
 * phase's load (autocannon, same connections) for the throughput and latency under load.
 */
export async function httpFloor() {
  const server = spawn(process.execPath, [path.join(ROOT, 'scripts/bench/http-floor-server.mjs')], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  try {
    const port = await new Promise((resolve, reject) => {
      server.stdout.once('data', (c) => resolve(Number(String(c).trim())));
      server.once('exit', (code) => reject(new Error(`HTTP floor server exited with ${code}`)));
    });
    const url = `http://127.0.0.1:${port}/v1/scrub`;
    const bodies = Array.from({ length: 100 }, (_, i) => body(inputs(1, 10_000, i + 100).phones));
    const post = (i) =>
      fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'idempotency-key': `floor-${i}` },
        body: bodies[i % 100],
      }).then((r) => r.text());
    for (let i = 0; i < CONFIG.lone_warmup; i++) await post(i);
    const samples = [];
    const until = now() + CONFIG.floor_seconds * 1000;
    for (let i = 0; now() < until || samples.length < CONFIG.lone_runs; i++) {
      const t = now();
      await post(i);
      samples.push(now() - t);
    }
    const loaded = await autocannonRun({
      url,
      connections: CONFIG.single_connections,
      seconds: CONFIG.floor_seconds,
      bodies,
      headers: (n) => ({ 'idempotency-key': `floor-ac-${n}` }),
    });
    return { lone_ms: summarize(samples), loaded: loadFigures(loaded) };
  } finally {
    server.kill('SIGTERM');
  }
}

/** pgbench's summary line `name = value ...` as a number. */
function pgbenchFigure(output, name) {
  const m = new RegExp(`${name} = ([0-9.]+)`).exec(output);
  return m ? Number(m[1]) : Number.NaN;
}

/**
 * PostgreSQL's durable commit: pgbench inserting one row per transaction (synchronous_commit as the
 * server has it) into a table of the bench database, one client (the latency of a commit) and 16
 * clients (the commits per second the server sustains when commits share their WAL flushes).
 */
export async function pgFloor(databaseUrl, workDir) {
  try {
    await run('pgbench', ['--version']);
  } catch {
    log('pgbench not found: the PostgreSQL floor is not measured (apt-get install postgresql-client)');
    return { missing: 'pgbench not found (Debian: apt-get install postgresql-client)' };
  }
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  let setting;
  try {
    await client.query('CREATE TABLE IF NOT EXISTS bench_floor_commits (id bigserial PRIMARY KEY, v int)');
    setting = (await client.query('SHOW synchronous_commit')).rows[0].synchronous_commit;
  } finally {
    await client.end();
  }
  const script = path.join(workDir, 'floor-commit.sql');
  writeFileSync(script, 'INSERT INTO bench_floor_commits (v) VALUES (1);\n');
  const bench = async (clients) => {
    const { stdout } = await run('pgbench', [
      '-n',
      '-M',
      'prepared',
      '-c',
      String(clients),
      '-j',
      String(Math.min(clients, 2)),
      '-T',
      String(CONFIG.floor_seconds),
      '-f',
      script,
      databaseUrl,
    ]);
    return {
      latency_ms: pgbenchFigure(stdout, 'latency average'),
      tps: round(pgbenchFigure(stdout, 'tps'), 0),
    };
  };
  const one = await bench(1);
  const many = await bench(16);
  const { stdout: version } = await run('pgbench', ['--version']);
  return { synchronous_commit: setting, pgbench: version.trim(), one_client: one, sixteen_clients: many };
}
