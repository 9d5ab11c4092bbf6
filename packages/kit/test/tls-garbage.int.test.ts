import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

// A peer that sends bytes which are not its TLS records (a middlebox, a fault proxy, a broken
// connection) must cost the calls on that connection, never the process. The chaos suite saw a
// gateway exit with "uncaught exception: Error (ERR_SSL_DECRYPTION_FAILED_OR_BAD_RECORD_MAC)" while
// an adapter's fault proxy sent garbage (S10): Connect's session manager drops its 'error' listener
// from a session as soon as a call finds it destroyed and opens the next one, and Node emits that
// session's error only later, once its socket has closed. A real process runs the built kit: an
// mTLS Connect server, a client through a TCP proxy that alternates garbage and clean bytes, eight
// calls at a time; it dies like a service (runMain) on an uncaught exception.

const KIT = path.resolve(fileURLToPath(new URL('..', import.meta.url)), 'dist/index.js');

const SCRIPT = `
  import { mkdtempSync } from 'node:fs';
  import os from 'node:os';
  import path from 'node:path';
  import { createClient } from '@connectrpc/connect';
  import { connectNodeAdapter } from '@connectrpc/connect-node';
  import { LocalCa, TcpProxy } from '@dnc/devstack';
  import { quotav1 } from '@dnc/proto';
  import { callerContext, createRpcServer, rpcTransport, runMain, TlsMaterial } from ${JSON.stringify(KIT)};

  void runMain('probe', async () => {
    const TD = 'dnc.internal';
    const dir = mkdtempSync(path.join(os.tmpdir(), 'dnc-tls-garbage-'));
    const ca = await LocalCa.create({ trustDomain: TD });
    const security = async (identity) => {
      const d = path.join(dir, identity);
      await ca.writeIdentity(d, identity);
      return { mode: 'mtls', identity, trustDomain: TD, material: TlsMaterial.load(d, TD, identity) };
    };
    const serverSecurity = await security('quota');
    const handler = connectNodeAdapter({
      contextValues: callerContext(serverSecurity),
      routes: (router) =>
        router.service(quotav1.QuotaAdminService, {
          async setLimit() {
            await new Promise((r) => setTimeout(r, Math.random() * 30));
            return {};
          },
        }),
    });
    const server = createRpcServer(serverSecurity, handler);
    await new Promise((r) => server.listen(0, '127.0.0.1', r));
    const proxy = await TcpProxy.start([{ host: '127.0.0.1', port: server.address().port }]);
    const transport = rpcTransport('http://' + proxy.address, [], {
      security: await security('admission'),
      peer: 'quota',
    });
    const client = createClient(quotav1.QuotaAdminService, transport);
    let ok = 0;
    let failed = 0;
    const until = Date.now() + ${Number(process.env['DNC_TLS_GARBAGE_MS'] ?? 8_000)};
    let garbage = false;
    const flip = setInterval(() => {
      garbage = !garbage;
      proxy.setFault({ kind: garbage ? 'garbage' : 'pass' });
    }, 300);
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        while (Date.now() < until) {
          try {
            await client.setLimit({ orgId: 'o', country: 'co', limit: 1n }, { timeoutMs: 2_000 });
            ok++;
          } catch {
            failed++;
          }
        }
      }),
    );
    clearInterval(flip);
    process.stdout.write(JSON.stringify({ ok, failed }) + '\\n');
    process.exit(0);
  });
`;

function run(): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, ['--input-type=module', '-e', SCRIPT], {
    cwd: path.dirname(KIT),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => {
    stdout += d.toString();
  });
  child.stderr.on('data', (d: Buffer) => {
    stderr += d.toString();
  });
  return new Promise((resolve) => {
    const kill = setTimeout(() => child.kill('SIGKILL'), 50_000);
    child.on('exit', (code) => {
      clearTimeout(kill);
      resolve({ code, stdout, stderr });
    });
  });
}

describe('an HTTP/2 client connection that receives bytes which are not TLS records', () => {
  it('fails the calls on it and the process lives on', async () => {
    const r = await run();
    expect(r.stderr).not.toMatch(/uncaught exception|unhandled rejection/);
    expect(r.code).toBe(0);
    const { ok, failed } = JSON.parse(r.stdout) as { ok: number; failed: number };
    // Both halves happened: calls went through between the faults, and the faults broke some.
    expect(ok).toBeGreaterThan(0);
    expect(failed).toBeGreaterThan(0);
  });
});
