import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TcpProxy } from '../src/tcp-proxy.js';

// The chaos suite's fault proxy and balancer, against real sockets: an echo server behind it.

/** What the echo servers received, in order. */
const received: string[] = [];

function echoServer(tag: string): Promise<net.Server> {
  const server = net.createServer((s) => {
    s.on('error', () => {});
    s.on('data', (d) => {
      received.push(`${tag}:${d}`);
      s.write(`${tag}:${d}`);
    });
  });
  return new Promise((r) => server.listen(0, '127.0.0.1', () => r(server)));
}

const portOf = (s: net.Server) => (s.address() as net.AddressInfo).port;

/** Send one line and resolve with what came back within `ms` ('' when nothing did), or the error code. */
function ask(port: number, line: string, ms = 400): Promise<string> {
  return new Promise((resolve) => {
    const c = net.connect(port, '127.0.0.1');
    let got = '';
    const finish = (v: string) => {
      clearTimeout(timer);
      c.destroy();
      resolve(v);
    };
    const timer = setTimeout(() => finish(got), ms);
    c.on('data', (d) => {
      got += d.toString('latin1');
    });
    c.on('error', (e: NodeJS.ErrnoException) => finish(`error ${e.code}`));
    c.on('close', () => finish(got || 'closed'));
    c.write(line);
  });
}

describe('TcpProxy', () => {
  let a: net.Server;
  let b: net.Server;
  let proxy: TcpProxy;
  beforeAll(async () => {
    a = await echoServer('a');
    b = await echoServer('b');
    proxy = await TcpProxy.start([{ host: '127.0.0.1', port: portOf(a) }]);
  });
  afterAll(async () => {
    await proxy.close();
    a.close();
    b.close();
  });

  it('passes bytes both ways, and each fault does what it says', async () => {
    expect(await ask(proxy.port, 'x')).toBe('a:x');

    proxy.setFault({ kind: 'slow', delayMs: 150 });
    const t0 = Date.now();
    expect(await ask(proxy.port, 'x', 1_000)).toBe('a:x');
    expect(Date.now() - t0).toBeGreaterThanOrEqual(290);

    proxy.setFault({ kind: 'blackhole' });
    expect(await ask(proxy.port, 'x')).toBe('');

    // Muted: the request reaches the server, its answer never comes back.
    proxy.setFault({ kind: 'mute' });
    expect(await ask(proxy.port, 'muted')).toBe('');
    expect(received).toContain('a:muted');

    proxy.setFault({ kind: 'garbage' });
    const garbage = await ask(proxy.port, 'xyz');
    expect(garbage).toHaveLength(5);
    expect(garbage).not.toBe('a:xyz');

    proxy.setFault({ kind: 'reset' });
    expect(await ask(proxy.port, 'x')).toMatch(/error ECONNRESET|closed/);
    proxy.setFault({ kind: 'pass' });
  });

  it('holds bytes while hanging and delivers them when released', async () => {
    proxy.setFault({ kind: 'hang' });
    const pending = ask(proxy.port, 'x', 1_000);
    setTimeout(() => proxy.setFault({ kind: 'pass' }), 300);
    expect(await pending).toBe('a:x');
  });

  it('balances new connections round-robin and skips an upstream that refuses', async () => {
    const dead = await echoServer('dead');
    const deadPort = portOf(dead);
    await new Promise((r) => dead.close(r));
    proxy.setUpstreams([
      { host: '127.0.0.1', port: portOf(a) },
      { host: '127.0.0.1', port: deadPort },
      { host: '127.0.0.1', port: portOf(b) },
    ]);
    const seen = [];
    for (let i = 0; i < 6; i++) seen.push((await ask(proxy.port, 'x')).slice(0, 1));
    expect(new Set(seen)).toEqual(new Set(['a', 'b']));
    proxy.setUpstreams([{ host: '127.0.0.1', port: deadPort }]);
    expect(await ask(proxy.port, 'x')).toMatch(/closed|error/);
  });
});
