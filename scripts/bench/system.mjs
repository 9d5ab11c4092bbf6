// What the machine and its servers did during a phase: CPU seconds per process (from /proc), and the
// bench database's PostgreSQL counters. Linux only; elsewhere the CPU figures are left out.
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import os from 'node:os';
import pg from 'pg';

const TICKS = 100; // USER_HZ on Linux

/**
 * The fields of /proc/<pid>/stat after the command name, or undefined when the process is gone:
 * element 0 is field 3 (state), so field n of proc(5) is element n - 3.
 */
export function statFields(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  } catch {
    return undefined;
  }
}

/** CPU ticks so far of a process: utime + stime (fields 14 and 15); 0 when it is gone. */
function cpuTicks(pid) {
  const fields = statFields(pid);
  return fields ? Number(fields[11]) + Number(fields[12]) : 0;
}

/** Pids of every process with this command name (the shared servers: postgres, redis-server, nats-server). */
function pidsOf(comm) {
  const pids = [];
  let entries = [];
  try {
    entries = readdirSync('/proc');
  } catch {
    return pids;
  }
  for (const e of entries) {
    if (!/^\d+$/.test(e)) continue;
    try {
      if (readFileSync(`/proc/${e}/comm`, 'utf8').trim() === comm) pids.push(Number(e));
    } catch {
      // gone
    }
  }
  return pids;
}

/**
 * CPU seconds so far of each stack process and of this process, and of each process of the shared
 * servers by pid (`cpuDelta` counts a server process from its first sighting: a PostgreSQL backend that
 * exits within a phase no longer takes its whole past with it, which made the figure 0 or too low).
 */
export function cpuSnapshot(stack) {
  const snap = {};
  for (const [name] of stack.processes) {
    const pid = stack.child(name)?.pid;
    if (pid) snap[name] = cpuTicks(pid) / TICKS;
  }
  const self = process.cpuUsage();
  snap['bench (load generator)'] = (self.user + self.system) / 1e6;
  for (const [label, comm] of [
    ['postgres (server-wide)', 'postgres'],
    ['redis (server-wide)', 'redis-server'],
    ['nats (server-wide)', 'nats-server'],
  ]) {
    snap[label] = Object.fromEntries(pidsOf(comm).map((pid) => [pid, cpuTicks(pid) / TICKS]));
  }
  return snap;
}

/**
 * Voluntary context switches of a process's main thread so far: each one is its event loop going to
 * sleep and being woken by I/O or a timer, so their count over a phase is how often each process had
 * to wake (a request that crosses four processes wakes each of them at every hop). 0 where /proc has none.
 */
function mainThreadWakes(pid) {
  try {
    const status = readFileSync(`/proc/${pid}/task/${pid}/status`, 'utf8');
    return Number(/^voluntary_ctxt_switches:\s+(\d+)$/m.exec(status)?.[1] ?? 0);
  } catch {
    return 0;
  }
}

/** Event-loop wake-ups so far of each stack process (`mainThreadWakes`). */
export function wakeSnapshot(stack) {
  const snap = {};
  for (const [name] of stack.processes) {
    const pid = stack.child(name)?.pid;
    if (pid) snap[name] = mainThreadWakes(pid);
  }
  return snap;
}

/**
 * What each entry of `after` grew by since `before`: a number for a process (or a count), and for a
 * shared server (pid -> seconds) the sum over the processes alive at the end, each from its value in
 * `before` or, started since, from 0. The CPU of a server process that exited in between is left out.
 */
export function cpuDelta(before, after) {
  const grown = (b, a) => (a ?? 0) - (b ?? 0);
  const out = {};
  for (const [k, a] of Object.entries(after)) {
    const d =
      typeof a === 'object' && a !== null
        ? Object.entries(a).reduce((sum, [pid, v]) => sum + grown(before[k]?.[pid], v), 0)
        : grown(before[k], a);
    out[k] = Math.round(d * 1000) / 1000;
  }
  return out;
}

export function rssMiB(pid) {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (name) => Number(new RegExp(`${name}:\\s+(\\d+) kB`).exec(status)?.[1]);
    return { rss: Math.round(kb('VmRSS') / 1024), peak: Math.round(kb('VmHWM') / 1024) };
  } catch {
    return { rss: null, peak: null };
  }
}

/** PostgreSQL counters of one database (statistics are flushed within about a second). */
export async function pgCounters(databaseUrl) {
  const name = new URL(databaseUrl).pathname.slice(1);
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const r = await client.query(
      `SELECT xact_commit::float8 AS commits, tup_inserted::float8 AS inserted, tup_updated::float8 AS updated,
              tup_deleted::float8 AS deleted, pg_current_wal_lsn() AS lsn
         FROM pg_stat_database WHERE datname = $1`,
      [name],
    );
    const t = await client.query(
      `SELECT schemaname || '.' || relname AS name, (n_tup_ins + n_tup_upd + n_tup_del)::float8 AS writes
         FROM pg_stat_user_tables`,
    );
    // WAL flushes to disk (server-wide): the durable commits, several commits sharing one when they
    // arrive together (group commit). pg_stat_wal exists from PostgreSQL 14.
    const w = await client
      .query('SELECT wal_sync::float8 AS syncs FROM pg_stat_wal')
      .catch(() => ({ rows: [] }));
    return {
      ...r.rows[0],
      wal_syncs: w.rows[0]?.syncs ?? Number.NaN,
      tables: Object.fromEntries(t.rows.map((x) => [x.name, x.writes])),
    };
  } finally {
    await client.end();
  }
}

export function pgDelta(before, after) {
  const lsn = (s) => {
    const [hi, lo] = s.split('/');
    return Number.parseInt(hi, 16) * 2 ** 32 + Number.parseInt(lo, 16);
  };
  return {
    commits: after.commits - before.commits,
    rows_inserted: after.inserted - before.inserted,
    rows_updated: after.updated - before.updated,
    rows_deleted: after.deleted - before.deleted,
    wal_bytes_server_wide: lsn(after.lsn) - lsn(before.lsn),
    wal_syncs_server_wide: after.wal_syncs - before.wal_syncs,
    rows_written_by_table: Object.fromEntries(
      Object.entries(after.tables)
        .map(([name, n]) => [name, n - (before.tables[name] ?? 0)])
        .filter(([, n]) => n > 0),
    ),
  };
}

export function environment(root) {
  const git = (args) => {
    try {
      return execFileSync('git', args, {
        cwd: root,
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'ignore'],
      }).trim();
    } catch {
      return null;
    }
  };
  const cpus = os.cpus();
  return {
    git_commit: git(['rev-parse', 'HEAD']),
    git_dirty: (git(['status', '--porcelain', '--untracked-files=no']) ?? '') !== '',
    node: process.version,
    platform: `${os.platform()} ${os.release()} ${os.arch()}`,
    cpu_model: cpus[0]?.model ?? 'unknown',
    cores: os.availableParallelism(),
    memory_gib: Math.round((os.totalmem() / 2 ** 30) * 10) / 10,
    load_average_at_start: os.loadavg().map((l) => Math.round(l * 10) / 10),
    started_at: new Date().toISOString(),
  };
}
