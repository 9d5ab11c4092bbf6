import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import { Code, ConnectError, createClient } from '@connectrpc/connect';
import { connectNodeAdapter, createConnectTransport } from '@connectrpc/connect-node';
import { TcpProxy } from '@dnc/devstack';
import { jobsv1, platformv1 } from '@dnc/proto';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPool, type Pool } from '../src/db.js';
import { InFlight, rpcMetrics, trackCalls } from '../src/rpc-calls.js';

// Found by the chaos suite (S8): a job result read while PostgreSQL restarted answered 500. A
// server-streaming handler (GetJobResult) runs only as its messages are read, after the boundary
// interceptor returned, so its errors crossed unmapped as INTERNAL instead of UNAVAILABLE
// platform_failure. Here the handler reads PostgreSQL through a TCP proxy that resets the connection
// for real, before its first message and between two messages.

const DATABASE_URL = process.env['DATABASE_URL'] ?? 'postgres://postgres@127.0.0.1:5432/postgres';

let proxy: TcpProxy;
let pool: Pool;
let server: http2.Http2Server;
let client: ReturnType<typeof createClient<typeof jobsv1.JobsService>>;
let cutAfter = 0;
const sessions = new Set<http2.ServerHttp2Session>();

beforeAll(async () => {
  const target = new URL(DATABASE_URL);
  proxy = await TcpProxy.start([{ host: target.hostname, port: Number(target.port || 5432) }]);
  target.host = `127.0.0.1:${proxy.port}`;
  pool = createPool(target.toString(), 1);
  const logger = pino({ level: 'silent' });
  const handler = connectNodeAdapter({
    interceptors: [trackCalls(rpcMetrics(new Registry()), logger, new InFlight())],
    routes: (router) =>
      router.service(jobsv1.JobsService, {
        async *getJobResult() {
          for (let i = 0; i < 2; i++) {
            // Every connection to PostgreSQL reset, open or new, as when the server restarts.
            if (i === cutAfter) proxy.setFault({ kind: 'reset' });
            const r = await pool.query('SELECT $1::int AS n', [i]);
            yield { chunk: new Uint8Array([r.rows[0].n]) };
          }
        },
      }),
  });
  server = http2.createServer(handler);
  server.on('session', (session) => sessions.add(session));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const transport = createConnectTransport({
    baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    httpVersion: '2',
  });
  client = createClient(jobsv1.JobsService, transport);
});

afterAll(async () => {
  await pool.end();
  for (const session of sessions) session.destroy();
  await new Promise((r) => server.close(r));
  await proxy.close();
});

async function readAll(): Promise<number[]> {
  const out: number[] = [];
  for await (const m of client.getJobResult({ orgId: 'o', jobId: 'j' })) out.push(m.chunk[0]!);
  return out;
}

describe('a server-streaming call whose PostgreSQL connection is reset', () => {
  for (const [when, at] of [
    ['before its first message', 0],
    ['between two messages', 1],
  ] as const) {
    it(`${when}: UNAVAILABLE platform_failure, never INTERNAL`, async () => {
      cutAfter = at;
      const error = await readAll().then(
        () => undefined,
        (e: unknown) => ConnectError.from(e),
      );
      expect(error?.code).toBe(Code.Unavailable);
      expect(error?.findDetails(platformv1.ErrorInfoSchema)[0]?.reason).toBe('platform_failure');
      // PostgreSQL back: the next read goes through.
      proxy.setFault({ kind: 'pass' });
      cutAfter = -1;
      expect(await readAll()).toEqual([0, 1]);
    });
  }
});
