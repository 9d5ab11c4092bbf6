#!/usr/bin/env node
// Registry adapter benchmark (issue 4): load a registry of N numbers (default 10,000,000) through
// `dnc-admin registry load`, then time Check calls of 10,000 mixed inputs over gRPC.
//
//   node services/registry-adapter/test/bench/check-bench.mjs [--size 10000000] [--calls 200] [--batch 10000]
//     [--base DIR [--rounds 10] [--swap]] [--profile DIR]
//
// The adapter runs as its own process (scripts/run.js registry-adapter) against the local PostgreSQL
// and NATS, in a fresh database and NATS prefix that are dropped at the end, with mutual TLS as in
// production: a local CA (devstack's StackPki) issues the adapters' certificates
// (registry-adapter-mx), the caller's (conformance: Check and Describe) and dnc-admin's (operator, on
// the adapter's admin listener).
// Reports load time, the adapter's peak RSS (VmHWM), the replica's index rebuild, and Check latency
// percentiles.
//
// --base DIR: A/B. DIR is another built checkout (`npm ci && npm run build`, for example the commit
// before a change); the replica runs DIR's adapter, and after the usual figures the gateway's own
// client (kit rpcTransport + checkAt, each side's own kit) and the pre-encoded grpc-js call are
// timed against both adapters in alternating rounds (order reversed every round), so a neighbour's
// load falls on both: each round's p50 per side and the median of the ratios (this checkout / base).
// --profile DIR: both adapters run with --cpu-prof, their profiles written to DIR when they stop.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createWriteStream, readFileSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { fromBinary } from '@bufbuild/protobuf';
import { createClient } from '@connectrpc/connect';
import { StackPki } from '@dnc/devstack';
import { grpcTransport } from '@dnc/kit';
import { registryv1 } from '@dnc/proto';
import grpc from '@grpc/grpc-js';
import pg from 'pg';

const ROOT = path.resolve(fileURLToPath(new URL('../../../..', import.meta.url)));
const { values } = parseArgs({
  options: {
    size: { type: 'string', default: '10000000' },
    calls: { type: 'string', default: '200' },
    batch: { type: 'string', default: '10000' },
    // Share of valid numbers of other countries in the batch (in percent of inputs).
    'foreign-pct': { type: 'string', default: '2' },
    base: { type: 'string' },
    rounds: { type: 'string', default: '10' },
    profile: { type: 'string' },
    swap: { type: 'boolean', default: false },
  },
});
const SIZE = Number(values.size);
const CALLS = Number(values.calls);
const BATCH = Number(values.batch);
const FOREIGN = Number(values['foreign-pct']);
const DATABASE = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const NATS = process.env.NATS_URL ?? 'nats://127.0.0.1:4222';
const suffix = `${Date.now().toString(36)}${randomBytes(3).toString('hex')}`;
const dbUrl = new URL(DATABASE);
dbUrl.pathname = `/dnc_bench_${suffix}`;
const prefix = `B${suffix}_`;
const file = path.join(tmpdir(), `dnc-registry-bench-${suffix}.txt`);

const freePort = () =>
  new Promise((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });

// Registered lines: Mexican 10-digit numbers 55/81/33 + 8 digits, every third of each block, written
// in rotating forms (E.164, spaced, dashed, parenthesised, old 044 mobile prefix).
const AREAS = ['55', '81', '33'];
const lineOf = (i) => `${AREAS[i % 3]}${String(10_000_000 + Math.floor(i / 3) * 3).slice(-8)}`;
const unregisteredOf = (i) => `${AREAS[i % 3]}${String(10_000_001 + Math.floor(i / 3) * 3).slice(-8)}`;
const FORMS = [
  (d) => `+52${d}`,
  (d) => `+52 ${d.slice(0, 2)} ${d.slice(2, 6)} ${d.slice(6)}`,
  (d) => `${d.slice(0, 2)}-${d.slice(2, 6)}-${d.slice(6)}`,
  (d) => `(${d.slice(0, 2)}) ${d.slice(2, 6)} ${d.slice(6)}`,
  (d) => `044 ${d}`,
];

async function writeRegistryFile() {
  const out = createWriteStream(file);
  let buf = '';
  for (let i = 0; i < SIZE; i++) {
    buf += `${FORMS[i % FORMS.length](lineOf(i))}\n`;
    if (buf.length > 1 << 20) {
      if (!out.write(buf)) await new Promise((r) => out.once('drain', r));
      buf = '';
    }
  }
  out.end(buf);
  await new Promise((r) => out.once('finish', r));
}

/** CPU milliseconds (user + system) a process has used, from /proc (clock ticks of 10 ms). */
function cpuMs(pid) {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

function peakRss(pid) {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const hwm = /VmHWM:\s+(\d+) kB/.exec(status);
  const rss = /VmRSS:\s+(\d+) kB/.exec(status);
  return { peakMiB: Math.round(Number(hwm?.[1]) / 1024), nowMiB: Math.round(Number(rss?.[1]) / 1024) };
}

function run(cmd, args, env) {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (c) => {
      out += c;
    });
    child.once('exit', (code) =>
      code === 0 ? resolve(out) : reject(new Error(`${args[1]} exited ${code}`)),
    );
  });
}

/**
 * CheckRequest encoded directly (field 1 country, field 2 repeated phones, UTF-8): the same bytes as
 * protobuf-es `toBinary`, which spends 10-40 ms on 10,000 strings on this machine - client cost that
 * says nothing about the adapter. Compared with toBinary once below.
 */
function encodeCheckRequest(country, phones) {
  const lengths = phones.map((p) => Buffer.byteLength(p));
  let size = 2 + Buffer.byteLength(country);
  for (const l of lengths) size += 1 + (l < 128 ? 1 : 2) + l;
  const buf = Buffer.allocUnsafe(size);
  let o = 0;
  buf[o++] = 0x0a;
  buf[o++] = Buffer.byteLength(country);
  o += buf.write(country, o);
  phones.forEach((p, i) => {
    const l = lengths[i];
    buf[o++] = 0x12;
    if (l < 128) buf[o++] = l;
    else {
      buf[o++] = (l & 0x7f) | 0x80;
      buf[o++] = l >> 7;
    }
    o += buf.write(p, o);
  });
  return buf;
}

async function series(label, call, phones, expected, calls = CALLS, warmup = 20) {
  const samples = [];
  for (let i = 0; i < calls + warmup; i++) {
    const started = process.hrtime.bigint();
    const res = await call();
    const ms = Number(process.hrtime.bigint() - started) / 1e6;
    if (i >= warmup) samples.push(ms);
    if (i === 0) {
      if (res.outcomes.length !== phones.length) throw new Error(`${label}: wrong number of outcomes`);
      res.outcomes.forEach((o, k) => {
        const want = expected[k];
        if (want === 2 && o !== registryv1.Outcome.PROHIBITED) throw new Error(`input ${k}: not prohibited`);
        if (want === 1 && o !== registryv1.Outcome.SAFE) throw new Error(`input ${k}: not safe`);
        if (want === 0 && o < registryv1.Outcome.INVALID_UNPARSEABLE)
          throw new Error(`input ${k}: not invalid`);
      });
    }
  }
  const raw = [...samples];
  samples.sort((a, b) => a - b);
  const figures = {
    p50: Number(pct(samples, 50).toFixed(2)),
    p90: Number(pct(samples, 90).toFixed(2)),
    p99: Number(pct(samples, 99).toFixed(2)),
    max: Number(samples.at(-1).toFixed(2)),
  };
  // Every sample in call order, for the A/B rounds; not printed.
  return Object.defineProperty(figures, 'samples', { value: raw });
}

const pct = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];

/** grpc-js credentials of the caller's certificate, accepting only the mx adapter's identity. */
function grpcCredentials(dir) {
  const read = (f) => readFileSync(path.join(dir, f));
  return grpc.credentials.createSsl(read('ca.crt'), read('tls.key'), read('tls.crt'), {
    checkServerIdentity: (_host, cert) =>
      (cert.subjectaltname ?? '').includes('/registry-adapter-mx') ? undefined : new Error('not the adapter'),
  });
}

/** One adapter process's environment: its certificate and its own ports. */
async function adapterEnvOf(pki, name, base) {
  await pki.write(name, 'registry-adapter-mx');
  const port = await freePort();
  const adminPort = await freePort();
  const env = {
    ...base,
    ...pki.env(name),
    DNC_GRPC_PORT: String(port),
    DNC_ADMIN_PORT: String(adminPort),
    DNC_HEALTH_PORT: String(await freePort()),
    DNC_METRICS_PORT: String(await freePort()),
  };
  return { env, port, adminPort };
}

/**
 * The gateway's client (each side's own kit: rpcTransport + the one-pass checkRequest) and the
 * pre-encoded grpc-js call against this checkout's adapter (head) and the base's, in alternating rounds.
 */
async function abRounds({ caller, phones, expected, ports, pids, base }) {
  const here = await import('@dnc/kit');
  const there = await import(path.join(base, 'packages/kit/dist/index.js'));
  const sides = {};
  for (const [name, kit] of [
    ['head', here],
    ['base', there],
  ]) {
    const transport = kit.rpcTransport(`http://127.0.0.1:${ports[name]}`, [], {
      security: caller,
      peer: 'registry-adapter-mx',
    });
    const client = createClient(registryv1.RegistryAdapterService, transport);
    // The gateway's client reads Check's answer as bytes where that kit has it (RegistryAdapterCheck).
    const checker = createClient(kit.RegistryAdapterCheck ?? registryv1.RegistryAdapterService, transport);
    const raw = new grpc.Client(`127.0.0.1:${ports[name]}`, grpcCredentials(caller.material.dir), {
      'grpc.max_receive_message_length': 64 << 20,
      'grpc.max_send_message_length': 64 << 20,
      'grpc.ssl_target_name_override': 'localhost',
    });
    sides[name] = {
      raw,
      // What the gateway sends: phone_list through checkAt where that kit has it (a base from before
      // it sends the phones records).
      gateway: kit.checkAt
        ? () => kit.checkAt(checker, 'mx', phones, { timeoutMs: 10_000 })
        : () => client.check(kit.checkRequest('mx', phones), { timeoutMs: 10_000 }),
      grpc: () =>
        new Promise((resolve, reject) =>
          raw.makeUnaryRequest(
            '/dnc.registry.v1.RegistryAdapterService/Check',
            (b) => b,
            (b) => fromBinary(registryv1.CheckResponseSchema, b),
            encodeCheckRequest('mx', phones),
            new grpc.Metadata(),
            { deadline: Date.now() + 10_000 },
            (e, r) => (e ? reject(e) : resolve(r)),
          ),
        ),
    };
  }
  const per = Math.max(10, Math.round(CALLS / 4));
  const out = {};
  for (const kind of ['gateway', 'grpc']) {
    const rounds = [];
    const all = { head: [], base: [] };
    // CPU milliseconds per call, of the adapter (from /proc) and of this process (the client): on a
    // busy machine they move far less than wall times.
    const cpu = { head: { adapter: 0, client: 0, calls: 0 }, base: { adapter: 0, client: 0, calls: 0 } };
    for (let r = 0; r < Number(values.rounds); r++) {
      const order = r % 2 ? ['base', 'head'] : ['head', 'base'];
      const p50 = {};
      for (const name of order) {
        await series(`${kind} ${name}`, sides[name][kind], phones, expected, 5, 0);
        const adapterBefore = cpuMs(pids[name]);
        const clientBefore = process.cpuUsage();
        const s = await series(`${kind} ${name}`, sides[name][kind], phones, expected, per, 0);
        const client = process.cpuUsage(clientBefore);
        cpu[name].adapter += cpuMs(pids[name]) - adapterBefore;
        cpu[name].client += (client.user + client.system) / 1000;
        cpu[name].calls += per;
        p50[name] = s.p50;
        all[name].push(...s.samples);
      }
      rounds.push({ ...p50, ratio: Number((p50.head / p50.base).toFixed(3)) });
    }
    const ratios = rounds.map((x) => x.ratio).sort((a, b) => a - b);
    const p50 = (xs) =>
      Number(
        pct(
          [...xs].sort((a, b) => a - b),
          50,
        ).toFixed(2),
      );
    out[kind] = {
      rounds,
      median_ratio_head_over_base: ratios[Math.floor(ratios.length / 2)],
      p50_head: p50(all.head),
      p50_base: p50(all.base),
      cpu_ms_per_call: Object.fromEntries(
        Object.entries(cpu).map(([name, c]) => [
          name,
          {
            adapter: Number((c.adapter / c.calls).toFixed(2)),
            client: Number((c.client / c.calls).toFixed(2)),
          },
        ]),
      ),
    };
  }
  for (const s of Object.values(sides)) s.raw.close();
  return out;
}

async function main() {
  const pki = await StackPki.create();
  const base = {
    COUNTRY: 'mx',
    DATABASE_URL: dbUrl.toString(),
    NATS_URL: NATS,
    DNC_NATS_PREFIX: prefix,
    DNC_LOG_LEVEL: 'warn',
  };
  const primary = await adapterEnvOf(pki, 'adapter', base);
  const second = await adapterEnvOf(pki, 'replica', base);
  const { port } = primary;
  const metricsPort = Number(primary.env.DNC_METRICS_PORT);
  // Check and Describe on the data listener: the identity the authorization table lets do both.
  const caller = await pki.security('conformance');
  const operatorDir = await pki.write('operator', 'operator');
  const transportTo = (p) =>
    grpcTransport(`http://127.0.0.1:${p}`, [], { security: caller, peer: 'registry-adapter-mx' });
  console.log(`writing ${SIZE.toLocaleString('en')} registry lines to ${file}`);
  let t = Date.now();
  await writeRegistryFile();
  console.log(`  ${((Date.now() - t) / 1000).toFixed(1)} s`);
  const profile = values.profile ? ['--cpu-prof', `--cpu-prof-dir=${path.resolve(values.profile)}`] : [];
  const BASE = values.base ? path.resolve(values.base) : undefined;
  // --swap: the base build is the primary (it takes the load and the first figures) and this one the
  // replica, so the primary's extra history falls on the other side.
  const [primaryRoot, replicaRoot] = BASE && values.swap ? [BASE, ROOT] : [ROOT, BASE ?? ROOT];
  const adapter = spawn(
    process.execPath,
    [...profile, path.join(primaryRoot, 'scripts/run.js'), 'registry-adapter'],
    {
      env: { ...process.env, ...primary.env },
      stdio: ['ignore', 'inherit', 'inherit'],
    },
  );
  // A second replica of the same country: it must pick the loaded snapshot up by itself.
  const replica = spawn(
    process.execPath,
    [...profile, path.join(replicaRoot, 'scripts/run.js'), 'registry-adapter'],
    {
      env: { ...process.env, ...second.env },
      stdio: ['ignore', 'inherit', 'inherit'],
    },
  );
  const replicaClient = createClient(registryv1.RegistryAdapterService, transportTo(second.port));
  const client = createClient(registryv1.RegistryAdapterService, transportTo(port));
  try {
    for (let i = 0; ; i++) {
      try {
        await client.describe({}, { timeoutMs: 500 });
        break;
      } catch {
        if (i > 200) throw new Error('adapter did not start');
        await new Promise((r) => setTimeout(r, 100));
      }
    }
    console.log(`adapter started, RSS ${peakRss(adapter.pid).nowMiB} MiB`);

    t = Date.now();
    const loaded = JSON.parse(
      await run(
        process.execPath,
        [
          path.join(ROOT, 'packages/admin-cli/dist/main.js'),
          'registry',
          'load',
          '--country',
          'mx',
          '--file',
          file,
          '--address',
          `127.0.0.1:${primary.adminPort}`,
        ],
        { DNC_TLS_DIR: operatorDir, DNC_TRUST_DOMAIN: pki.trustDomain },
      ),
    );
    const loadSeconds = (Date.now() - t) / 1000;
    console.log(`load: ${JSON.stringify(loaded)}`);
    console.log(
      `  ${loadSeconds.toFixed(1)} s end to end; adapter peak RSS ${peakRss(adapter.pid).peakMiB} MiB`,
    );

    const d = await client.describe({});
    if (d.snapshotId !== loaded.snapshot_id)
      throw new Error('the adapter does not serve the loaded snapshot');
    let replicaSeconds;
    for (;;) {
      const r = await replicaClient.describe({}, { timeoutMs: 2_000 }).catch(() => undefined);
      if (r?.snapshotId === loaded.snapshot_id) {
        replicaSeconds = (Date.now() - t) / 1000 - loadSeconds;
        break;
      }
      if ((Date.now() - t) / 1000 - loadSeconds > 120)
        throw new Error('the replica did not pick the snapshot up');
      await new Promise((r) => setTimeout(r, 50));
    }
    console.log(`  replica serving the new snapshot ${replicaSeconds.toFixed(1)} s after the load returned`);

    // 10,000 mixed inputs: 45% registered (assorted forms), 45% unregistered valid, the rest invalid:
    // FOREIGN% valid numbers of other countries, the others garbage or too short.
    const phones = [];
    const expected = [];
    for (let i = 0; i < BATCH; i++) {
      const j = (i * 7919) % SIZE;
      const r = (i * 37) % 100;
      if (r < 45) {
        phones.push(FORMS[i % FORMS.length](lineOf(j)));
        expected.push(2);
      } else if (r < 90) {
        phones.push(FORMS[i % FORMS.length](unregisteredOf(j)));
        expected.push(1);
      } else {
        phones.push(
          r < 90 + FOREIGN ? `+1 212 555 ${String(1000 + (i % 9000))}` : r % 2 ? `garbage ${i}` : `55 12${i}`,
        );
        expected.push(0);
      }
    }
    const { create, toBinary } = await import('@bufbuild/protobuf');
    const reference = toBinary(
      registryv1.CheckRequestSchema,
      create(registryv1.CheckRequestSchema, { country: 'mx', phones }),
    );
    if (Buffer.compare(Buffer.from(reference), encodeCheckRequest('mx', phones)) !== 0)
      throw new Error('encoder differs');
    const connectMs = await series(
      'connect',
      () => client.check({ country: 'mx', phones }, { timeoutMs: 10_000 }),
      phones,
      expected,
    );
    const raw = new grpc.Client(`127.0.0.1:${port}`, grpcCredentials(caller.material.dir), {
      'grpc.max_receive_message_length': 64 << 20,
      'grpc.max_send_message_length': 64 << 20,
      // The certificate names an identity, not this address: no IP address as the TLS server name.
      'grpc.ssl_target_name_override': 'localhost',
    });
    const encoded = () => encodeCheckRequest('mx', phones);
    const grpcMs = await series(
      'grpc-js',
      () =>
        new Promise((resolve, reject) =>
          raw.makeUnaryRequest(
            '/dnc.registry.v1.RegistryAdapterService/Check',
            (b) => b,
            (b) => fromBinary(registryv1.CheckResponseSchema, b),
            encoded(),
            new grpc.Metadata(),
            { deadline: Date.now() + 10_000 },
            (e, r) => (e ? reject(e) : resolve(r)),
          ),
        ),
      phones,
      expected,
    );
    raw.close();
    // Server side: the Check handler's own time (validation + lookup), from the adapter's histogram.
    const metrics = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    const metric = (name) => Number(new RegExp(`^${name}\\{[^}]*\\} ([0-9.e+-]+)$`, 'm').exec(metrics)?.[1]);
    const handlerMeanMs =
      (metric('dnc_adapter_check_duration_seconds_sum') /
        metric('dnc_adapter_check_duration_seconds_count')) *
      1000;
    const summary = {
      registry_size: Number(d.registrySize),
      load_seconds: Number(loadSeconds.toFixed(1)),
      adapter_peak_rss_mib: peakRss(adapter.pid).peakMiB,
      adapter_rss_after_mib: peakRss(adapter.pid).nowMiB,
      replica_pickup_seconds: Number(replicaSeconds.toFixed(1)),
      replica_peak_rss_mib: peakRss(replica.pid).peakMiB,
      check_batch: BATCH,
      foreign_pct: FOREIGN,
      check_calls: CALLS,
      handler_mean_ms: Number(handlerMeanMs.toFixed(2)),
      load_average: (await import('node:os')).loadavg().map((l) => Number(l.toFixed(1))),
      // Round trip over gRPC, request encoded per call: with @grpc/grpc-js and the direct encoder, and
      // with the Connect client (protobuf-es toBinary on the client).
      check_ms: grpcMs,
      check_ms_connect_client: connectMs,
    };
    console.log(JSON.stringify(summary, null, 2));
    if (summary.check_ms.p50 >= 25) process.exitCode = 1;
    if (BASE) {
      const ab = await abRounds({
        caller,
        phones,
        expected,
        ports: values.swap ? { head: second.port, base: port } : { head: port, base: second.port },
        pids: values.swap
          ? { head: replica.pid, base: adapter.pid }
          : { head: adapter.pid, base: replica.pid },
        base: BASE,
      });
      console.log(JSON.stringify(ab, null, 2));
    }
  } finally {
    for (const child of [adapter, replica]) {
      child.kill('SIGTERM');
      if (child.exitCode === null) await new Promise((r) => child.once('exit', r));
    }
    rmSync(file, { force: true });
    pki.close();
    const admin = new URL(dbUrl);
    admin.pathname = '/postgres';
    const c = new pg.Client({ connectionString: admin.toString() });
    await c.connect();
    await c.query(`DROP DATABASE IF EXISTS "${dbUrl.pathname.slice(1)}" WITH (FORCE)`);
    await c.end();
    const { connect } = await import('@nats-io/transport-node');
    const { jetstreamManager } = await import('@nats-io/jetstream');
    const nc = await connect({ servers: NATS });
    const jsm = await jetstreamManager(nc);
    for await (const name of jsm.streams.names()) {
      if (name.startsWith(prefix) || name.startsWith(`KV_${prefix}`))
        await jsm.streams.delete(name).catch(() => {});
    }
    await nc.close();
  }
}

await main();
