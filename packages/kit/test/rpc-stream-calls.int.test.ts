import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import { Code, ConnectError, createClient } from '@connectrpc/connect';
import { connectNodeAdapter, createConnectTransport } from '@connectrpc/connect-node';
import { TcpProxy } from '@dnc/devstack';
import { jobsv1 } from '@dnc/proto';
import pg from 'pg';
import { pino } from 'pino';
import { type Histogram, Registry } from 'prom-client';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { createPool, type Pool } from '../src/db.js';
import { publicError } from '../src/errors.js';
import { InFlight, rpcMetrics, trackCalls } from '../src/rpc-calls.js';

// A server-streaming call (GetJobResult) is served as its messages are read, after the boundary
// interceptor's `next` returned. It was counted `ok`, timed and let out of the drain's in-flight
// count at that point: a result download that failed midway was counted ok, its histogram said ~0 s,
// and a graceful shutdown did not wait for it. Here the handler streams from PostgreSQL: its second
// message waits on an advisory lock the test holds (a slow read, as long as the test wants), and the
// test resets PostgreSQL's connections (a restart under the read), or the client goes away meanwhile:
// it cancels the call, or its connection is reset (a TCP proxy between the client and the server).

const DATABASE_URL = process.env['DATABASE_URL'] ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const METHOD = `${jobsv1.JobsService.typeName}/GetJobResult`;
const LOCK = 7_000_000 + Math.floor(Math.random() * 1_000_000);
const HOLD_MS = 300;

let proxy: TcpProxy;
let front: TcpProxy;
let pool: Pool;
let locker: pg.Client;
let server: http2.Http2Server;
let client: ReturnType<typeof createClient<typeof jobsv1.JobsService>>;
const registry = new Registry();
const inFlight = new InFlight();
const sessions = new Set<http2.ServerHttp2Session>();

beforeAll(async () => {
  const target = new URL(DATABASE_URL);
  proxy = await TcpProxy.start([{ host: target.hostname, port: Number(target.port || 5432) }]);
  target.host = `127.0.0.1:${proxy.port}`;
  pool = createPool(target.toString(), 2);
  locker = new pg.Client({ connectionString: DATABASE_URL });
  await locker.connect();
  const handler = connectNodeAdapter({
    interceptors: [trackCalls(rpcMetrics(registry), pino({ level: 'silent' }), inFlight)],
    routes: (router) =>
      router.service(jobsv1.JobsService, {
        async *getJobResult(req) {
          if (req.jobId === 'not-ready') throw publicError(Code.FailedPrecondition, 'job_result_not_ready');
          // Two segments; the second waits for the lock the test may hold.
          const first = await pool.query('SELECT 0 AS n');
          yield { chunk: new Uint8Array([first.rows[0].n]) };
          const second = await pool.query('SELECT pg_advisory_xact_lock_shared($1), 1 AS n', [LOCK]);
          yield { chunk: new Uint8Array([second.rows[0].n]) };
        },
        async getJob(req) {
          if (req.jobId === 'missing') throw publicError(Code.NotFound, 'job_not_found');
          await pool.query('SELECT 1');
          return {};
        },
      }),
  });
  server = http2.createServer(handler);
  server.on('session', (session) => sessions.add(session));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  front = await TcpProxy.start([{ host: '127.0.0.1', port: (server.address() as AddressInfo).port }]);
  const transport = createConnectTransport({
    baseUrl: `http://127.0.0.1:${front.port}`,
    httpVersion: '2',
  });
  client = createClient(jobsv1.JobsService, transport);
});

afterEach(async () => {
  await locker.query('SELECT pg_advisory_unlock_all()');
  proxy.setFault({ kind: 'pass' });
  front.setFault({ kind: 'pass' });
  await vi.waitFor(() => expect(inFlight.size).toBe(0));
  registry.resetMetrics();
});

afterAll(async () => {
  await locker.end();
  await pool.end();
  for (const session of sessions) session.destroy();
  await new Promise((r) => server.close(r));
  await front.close();
  await proxy.close();
});

/** `dnc_rpc_requests_total` of `method`, by code (only the codes counted). */
async function counted(method = METHOD): Promise<Record<string, number>> {
  const metric = await registry.getSingleMetric('dnc_rpc_requests_total')?.get();
  const out: Record<string, number> = {};
  for (const v of metric?.values ?? [])
    if (v.labels['method'] === method) out[String(v.labels['code'])] = v.value;
  return out;
}

/** `dnc_rpc_duration_seconds` of `method`: observations and their sum. */
async function timed(method = METHOD): Promise<{ count: number; sum: number }> {
  const histogram = registry.getSingleMetric('dnc_rpc_duration_seconds') as Histogram | undefined;
  const metric = await histogram?.get();
  const of = (name: string) =>
    metric?.values.find((v) => v.metricName === name && v.labels['method'] === method)?.value ?? 0;
  return { count: of('dnc_rpc_duration_seconds_count'), sum: of('dnc_rpc_duration_seconds_sum') };
}

/** A result read that has its first message while its second one waits for the lock. */
async function readingWhileLocked(signal?: AbortSignal) {
  await locker.query('SELECT pg_advisory_lock($1)', [LOCK]);
  const stream = client.getJobResult({ orgId: 'o', jobId: 'j' }, { signal })[Symbol.asyncIterator]();
  const first = await stream.next();
  expect(first.value?.chunk).toEqual(new Uint8Array([0]));
  // Mid-stream: in flight for the drain, not counted yet.
  expect(inFlight.size).toBe(1);
  expect(await counted()).toEqual({});
  return stream;
}

const unlock = () => locker.query('SELECT pg_advisory_unlock($1)', [LOCK]);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('a server-streaming call is counted, timed and in flight until its stream ends', () => {
  it('read to its end: counted ok once when it ends, timed over the whole stream', async () => {
    const stream = await readingWhileLocked();
    // A drain starting now (Service.shutdown: waitIdle) waits for the rest of the download.
    let drained = false;
    const idle = inFlight.waitIdle().then(() => (drained = true));
    await sleep(HOLD_MS);
    expect(drained).toBe(false);
    await unlock();
    expect((await stream.next()).value?.chunk).toEqual(new Uint8Array([1]));
    expect((await stream.next()).done).toBe(true);
    await idle;
    expect(inFlight.size).toBe(0);
    expect(await counted()).toEqual({ ok: 1 });
    const t = await timed();
    expect(t.count).toBe(1);
    expect(t.sum).toBeGreaterThanOrEqual(HOLD_MS / 1000);
  });

  it('PostgreSQL reset between two messages: counted once with its error, never ok', async () => {
    const stream = await readingWhileLocked();
    await sleep(HOLD_MS);
    proxy.setFault({ kind: 'reset' });
    const error = await stream.next().then(
      () => undefined,
      (e: unknown) => ConnectError.from(e),
    );
    expect(error?.code).toBe(Code.Unavailable);
    expect(inFlight.size).toBe(0);
    // The code of the error the handler threw, as for a unary call (below): it crossed as UNAVAILABLE.
    expect(await counted()).toEqual({ Unknown: 1 });
    const t = await timed();
    expect(t.count).toBe(1);
    expect(t.sum).toBeGreaterThanOrEqual(HOLD_MS / 1000);
  });

  it('refused before its first message (result not ready): counted with its code, not ok', async () => {
    const error = await client
      .getJobResult({ orgId: 'o', jobId: 'not-ready' })
      [Symbol.asyncIterator]()
      .next()
      .then(
        () => undefined,
        (e: unknown) => ConnectError.from(e),
      );
    expect(error?.code).toBe(Code.FailedPrecondition);
    expect(inFlight.size).toBe(0);
    expect(await counted()).toEqual({ FailedPrecondition: 1 });
  });

  for (const how of ['cancels the call', 'has its connection reset'] as const) {
    it(`the client ${how} midway: out of flight once the handler stops, counted CANCELED once`, async () => {
      const abort = new AbortController();
      await readingWhileLocked(abort.signal);
      if (how === 'cancels the call') abort.abort();
      else front.setFault({ kind: 'reset' });
      // The handler learns it when its next message finds the client gone; the drain waits till then.
      await sleep(100);
      expect(inFlight.size).toBe(1);
      await unlock();
      await vi.waitFor(() => expect(inFlight.size).toBe(0));
      expect(await counted()).toEqual({ Canceled: 1 });
      expect((await timed()).count).toBe(1);
    });
  }
});

describe('a unary call (unchanged)', () => {
  it('counted with its code and timed once, out of flight when answered', async () => {
    const m = `${jobsv1.JobsService.typeName}/GetJob`;
    const codeOf = (call: Promise<unknown>) =>
      call.then(
        () => 'ok',
        (e: unknown) => Code[ConnectError.from(e).code],
      );
    expect(await codeOf(client.getJob({ orgId: 'o', jobId: 'j' }))).toBe('ok');
    expect(await codeOf(client.getJob({ orgId: 'o', jobId: 'missing' }))).toBe('NotFound');
    proxy.setFault({ kind: 'reset' });
    expect(await codeOf(client.getJob({ orgId: 'o', jobId: 'j' }))).toBe('Unavailable');
    expect(inFlight.size).toBe(0);
    expect(await counted(m)).toEqual({ ok: 1, NotFound: 1, Unknown: 1 });
    expect((await timed(m)).count).toBe(3);
  });
});
