import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { type Client, Code, ConnectError, createClient, type Transport } from '@connectrpc/connect';
import { LocalCa, TcpProxy } from '@dnc/devstack';
import { quotav1 } from '@dnc/proto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { grpcTransport, rpcTransport } from '../src/clients.js';
import type { Identity } from '../src/security/identity.js';
import type { Security } from '../src/security/security.js';
import { TlsMaterial } from '../src/security/tls-material.js';

// Chaos S10 (garbage bytes into adapter connections, full run): one v1 request took 14.0 s and the
// next 5 s served 2 of 6 v1 requests. Random bytes that a client's TLS layer reads as the header of
// a long record (here: application data, TLS 1.2 version, 16,384 bytes) leave it waiting for bytes
// that complete the record; until then it reads nothing, not even the answer to an HTTP/2 PING.
// Connect's session manager pings an open session only 10 s after its last answer and waits 5 s:
// every call sent on that session meanwhile waited up to 15 s. The same bytes as a new connection's
// first record left its TLS handshake waiting: nothing bounds a handshake (Node, http2.connect,
// Connect's manager), and every call of that client waited in "connecting" until its own deadline.
// A real mTLS server (its own process) behind a TCP proxy that sends the client such a header and then
// nothing more (the socket stays open).

const TD = 'dnc.internal';
/** The bound a call on a dead session must meet (the ping would take 10 + 5 s). */
const FAIL_FAST_MS = 3_000;
/** The gateway's v1 budget: what a call on such a session waited before. */
const BUDGET_MS = 15_000;

let dir: string;
let child: ChildProcess;
let proxy: TcpProxy;
let caller: Security;

async function identity(ca: LocalCa, id: Identity): Promise<Security> {
  const d = path.join(dir, id);
  await ca.writeIdentity(d, id);
  return { mode: 'mtls', identity: id, trustDomain: TD, material: TlsMaterial.load(d, TD, id) };
}

// The server runs in its own process, so that blocking its event loop does not block the client's.
const KIT = path.resolve(fileURLToPath(new URL('..', import.meta.url)), 'dist/index.js');
const SERVER = `
  import { Code, ConnectError } from '@connectrpc/connect';
  import { connectNodeAdapter } from '@connectrpc/connect-node';
  import { quotav1 } from '@dnc/proto';
  import { callerContext, createRpcServer, TlsMaterial } from ${JSON.stringify(KIT)};
  const [dir, td] = process.argv.slice(1);
  const security = { mode: 'mtls', identity: 'quota', trustDomain: td, material: TlsMaterial.load(dir, td, 'quota') };
  let pings = 0;
  // orgId says what the handler does: 'sleep' waits limit ms, 'block' blocks the event loop limit ms,
  // 'pings' answers with the PINGs received so far (in limit).
  async function setLimit(req) {
    const ms = Number(req.limit);
    if (req.orgId === 'sleep') await new Promise((r) => setTimeout(r, ms));
    if (req.orgId === 'block') {
      const until = Date.now() + ms;
      while (Date.now() < until) {}
    }
    if (req.orgId === 'pings') throw new ConnectError('pings=' + pings, Code.FailedPrecondition);
    return {};
  }
  const handler = connectNodeAdapter({
    contextValues: callerContext(security),
    routes: (router) => router.service(quotav1.QuotaAdminService, { setLimit }),
  });
  const server = createRpcServer(security, handler);
  server.on('session', (s) => s.on('ping', () => pings++));
  server.listen(0, '127.0.0.1', () => process.stdout.write(server.address().port + '\\n'));
`;

beforeAll(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'dnc-tls-stall-'));
  const ca = await LocalCa.create({ trustDomain: TD });
  await ca.writeIdentity(path.join(dir, 'quota'), 'quota');
  caller = await identity(ca, 'admission');
  child = spawn(process.execPath, ['--input-type=module', '-e', SERVER, path.join(dir, 'quota'), TD], {
    cwd: path.dirname(KIT),
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const port = await new Promise<number>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`server exited ${code}`)));
    child.stdout?.once('data', (d: Buffer) => resolve(Number(d.toString().trim())));
  });
  proxy = await TcpProxy.start([{ host: '127.0.0.1', port }]);
});

afterAll(async () => {
  await proxy?.close();
  child?.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

type Outcome = { ms: number; code: Code | 'ok' };

async function timed(call: () => Promise<unknown>): Promise<Outcome> {
  const t0 = performance.now();
  try {
    await call();
    return { ms: performance.now() - t0, code: 'ok' };
  } catch (error) {
    return { ms: performance.now() - t0, code: ConnectError.from(error).code };
  }
}

/** PINGs the server has received so far (its handler answers them as an error message). */
async function pingsOf(client: Client<typeof quotav1.QuotaAdminService>): Promise<number> {
  const error = await client.setLimit({ orgId: 'pings', country: 'co', limit: 0n }).then(
    () => undefined,
    (e: unknown) => ConnectError.from(e).rawMessage,
  );
  return Number(/pings=(\d+)/.exec(error ?? '')?.[1]);
}

const transports: [string, (url: string) => Transport][] = [
  ['rpcTransport (Connect)', (url) => rpcTransport(url, [], { security: caller, peer: 'quota' })],
  ['grpcTransport (gRPC)', (url) => grpcTransport(url, [], { security: caller, peer: 'quota' })],
];

describe.each(transports)(
  '%s: a session whose TLS layer waits for a record that never completes',
  (_, make) => {
    it('fails the calls on it with UNAVAILABLE within 3 s, and the next calls get a new session', async () => {
      const client = createClient(quotav1.QuotaAdminService, make(`http://${proxy.address}`));
      const call = (orgId = 'o', limit = 1n) =>
        client.setLimit({ orgId, country: 'co', limit }, { timeoutMs: BUDGET_MS });
      for (let i = 0; i < 3; i++) await call();
      const connections = proxy.stats.connections;
      proxy.stallAll();
      // Calls sent at once and a little later on the stalled session: none waits for the ping.
      const stalled = await Promise.all(
        Array.from({ length: 8 }, (_, i) =>
          timed(() => new Promise((r) => setTimeout(r, i * 100)).then(() => call())),
        ),
      );
      for (const o of stalled) {
        expect(o.ms).toBeLessThan(FAIL_FAST_MS + 800);
        // Retryable for every caller (the gateway's second Check, the worker's retry).
        if (o.code !== 'ok') expect(o.code).toBe(Code.Unavailable);
      }
      const after = await Promise.all(Array.from({ length: 4 }, () => timed(() => call())));
      expect(after.map((o) => o.code)).toEqual(['ok', 'ok', 'ok', 'ok']);
      expect(Math.max(...after.map((o) => o.ms))).toBeLessThan(1_000);
      expect(proxy.stats.connections).toBeGreaterThan(connections);
    }, 60_000);

    it('fails the calls waiting for a new connection whose handshake reads such a record, within 3 s', async () => {
      const client = createClient(quotav1.QuotaAdminService, make(`http://${proxy.address}`));
      const call = () => client.setLimit({ orgId: 'o', country: 'co', limit: 1n }, { timeoutMs: BUDGET_MS });
      proxy.setFault({ kind: 'stall' });
      let stalled: Outcome[];
      try {
        stalled = await Promise.all(Array.from({ length: 4 }, () => timed(call)));
      } finally {
        proxy.setFault({ kind: 'pass' });
      }
      for (const o of stalled) {
        expect(o.ms).toBeLessThan(FAIL_FAST_MS);
        expect(o.code).toBe(Code.Unavailable);
      }
      const after = await Promise.all(Array.from({ length: 4 }, () => timed(call)));
      expect(after.map((o) => o.code)).toEqual(['ok', 'ok', 'ok', 'ok']);
      expect(Math.max(...after.map((o) => o.ms))).toBeLessThan(1_000);
    }, 60_000);

    it('keeps a healthy session through calls that answer late: a slow handler, a blocked event loop', async () => {
      const client = createClient(quotav1.QuotaAdminService, make(`http://${proxy.address}`));
      await client.setLimit({ orgId: 'o', country: 'co', limit: 1n });
      const connections = proxy.stats.connections;
      const pingsBefore = await pingsOf(client);
      const outcomes = await Promise.all([
        timed(() =>
          client.setLimit({ orgId: 'sleep', country: 'co', limit: 6_000n }, { timeoutMs: BUDGET_MS }),
        ),
        timed(() =>
          new Promise((r) => setTimeout(r, 2_000)).then(() =>
            // The server's event loop blocked 1 s (a large Check is ~0.1 s): its PING answer comes late.
            client.setLimit({ orgId: 'block', country: 'co', limit: 1_000n }, { timeoutMs: BUDGET_MS }),
          ),
        ),
      ]);
      expect(outcomes.map((o) => o.code)).toEqual(['ok', 'ok']);
      expect(proxy.stats.connections).toBe(connections);
      // The session was probed while the calls computed, and its PINGs answered (late, once).
      expect((await pingsOf(client)) - pingsBefore).toBeGreaterThanOrEqual(3);
    }, 30_000);
  },
);

describe('the probe is a bound, and an operator tool goes without it', () => {
  it("a peer whose loop is blocked past the probe: the services' transport fails the call, the operator's waits", async () => {
    const block = (make: (url: string) => Transport) =>
      timed(() =>
        createClient(quotav1.QuotaAdminService, make(`http://${proxy.address}`)).setLimit(
          { orgId: 'block', country: 'co', limit: 4_000n },
          { timeoutMs: BUDGET_MS },
        ),
      );
    const tls = { security: caller, peer: 'quota' as const };
    // 1 s without an answer, then a PING unanswered for 1.5 s: UNAVAILABLE (retryable), as documented.
    const probed = await block((url) => grpcTransport(url, [], tls));
    expect(probed.code).toBe(Code.Unavailable);
    expect(probed.ms).toBeLessThan(FAIL_FAST_MS + 800);
    // dnc-admin's transport (operatorTransport): the call waits for the peer and succeeds.
    const operator = await block((url) => grpcTransport(url, [], tls, { probe: false }));
    expect(operator.code).toBe('ok');
    expect(operator.ms).toBeGreaterThanOrEqual(3_900);
  }, 30_000);
});
