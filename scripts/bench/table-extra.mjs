// Rows of the report about the machine itself: the physical floors measured in the same run, the
// resident memory of every process, and per-request costs that do not depend on how busy it is.
import { int, mib, ms } from './format.mjs';

/**
 * What bounds a lone request here: one HTTP round trip between two processes and one durable commit
 * (the idempotency record must be durable before the answer). Without pgbench, the HTTP part alone.
 */
export function loneFloorMs(r) {
  const http = r.http_floor?.lone_ms?.p50;
  const commit = r.pg_floor?.one_client?.latency_ms;
  return (http ?? Number.NaN) + (Number.isFinite(commit) ? commit : 0);
}

const SERVICES = ['gateway', 'admission', 'quota', 'adapter', 'postgres (server-wide)'];

/**
 * Cost per request of a phase that is stable on a busy machine: CPU milliseconds of each process (net
 * of idle), PostgreSQL commits and WAL flushes, the RPCs the services served, and how often each
 * service's event loop woke (net of idle).
 */
export function perRequest(r, label) {
  const p = r.phases[label];
  if (!p?.cpu_ms_per_unit) return ['-'];
  const cpu = p.cpu_ms_per_unit;
  const key = (name) => (name === 'adapter' ? `adapter-${r.config.country}` : name);
  const values = SERVICES.map((n) => ms(cpu[key(n)]));
  const pg = p.postgres_per_unit;
  const wakes = p.wakes_per_unit
    ? `, wake-ups ${SERVICES.slice(0, 4)
        .map((n) => p.wakes_per_unit[key(n)] ?? '-')
        .join(' / ')}`
    : '';
  return [
    values.join(' / '),
    '',
    '',
    `PG commits ${pg.commits} (WAL flushes ${pg.wal_syncs_server_wide}, server-wide), internal calls ${p.rpcs_per_unit}${wakes}`,
  ];
}

export function floorRows(r, add) {
  const h = r.http_floor;
  if (h) {
    add(
      'floor',
      'HTTP round trip between two processes, lone, p50 / p99',
      `${ms(h.lone_ms.p50)} / ${ms(h.lone_ms.p99)}`,
      '',
      '',
      'node:http, the bench client',
    );
    add(
      'floor',
      `HTTP under the single-number load (${h.loaded.connections} conn): req/s, p50 / p99`,
      `${int(h.loaded.rps_mean)}, ${ms(h.loaded.latency_ms.p50)} / ${ms(h.loaded.latency_ms.p99)}`,
      '',
      '',
      'one server process (the gateway is one process too)',
    );
  }
  const p = r.pg_floor;
  if (p?.missing) add('floor', 'PostgreSQL durable commit', p.missing);
  else if (p) {
    add(
      'floor',
      'PostgreSQL durable one-row commit, 1 client: latency, commits/s',
      `${ms(p.one_client.latency_ms)}, ${int(p.one_client.tps)}`,
      '',
      '',
      `pgbench, synchronous_commit=${p.synchronous_commit}`,
    );
    add(
      'floor',
      'PostgreSQL durable one-row commits, 16 clients: commits/s',
      int(p.sixteen_clients.tps),
      '',
      '',
      'commits share WAL flushes',
    );
  }
}

/** RSS of every process: idle, under the single-number load (peak) and during the large v2 job (peak). */
export function memoryRows(r, add) {
  const idle = r.rss_idle_mib?.after_registry;
  if (!idle) return;
  const names = Object.keys(idle);
  const peakOf = (label) => r.phases[label]?.rss_mib ?? {};
  const single = peakOf('v1 single sustained');
  const job = peakOf('v2 large job');
  const v1k = peakOf('v1 10k');
  add('memory', `RSS MiB idle: ${names.join(' / ')}`, names.map((n) => mib(idle[n])).join(' / '));
  add('memory', '  peak under the single-number load', names.map((n) => mib(single[n]?.peak)).join(' / '));
  add(
    'memory',
    `  peak during the ${int(r.config.job_size)}-number job`,
    names.map((n) => mib(job[n]?.peak)).join(' / '),
  );
  const grow = (m, n) => (m[n] ? m[n].peak - m[n].start : Number.NaN);
  add(
    'memory',
    'peak per large request: gateway (v2 job | v1 10k) / job-worker (v2 job), MiB over its RSS before',
    `+${mib(grow(job, 'gateway'))} | +${mib(grow(v1k, 'gateway'))} / +${mib(grow(job, 'job-worker'))}`,
    '',
    '',
    'sampled every 50 ms',
  );
}
