import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import net from 'node:net';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ProxyHost } from '../proxies.mjs';

// The chaos world's proxies in their own process (proxy-host.mjs), driven from the runner's side.

/** Running: not gone, and not a zombie left for a reaper. */
const alive = (pid: number) => {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
};

async function until(check: () => boolean, ms: number): Promise<boolean> {
  const t0 = Date.now();
  while (Date.now() - t0 < ms) {
    if (check()) return true;
    await new Promise((r) => setTimeout(r, 50));
  }
  return check();
}

/**
 * Connect to `port`, write `text`, and collect what comes back until the connection closes, `text`'s
 * length has come back, or `ms` passed.
 */
function exchange(port: number, text: string, ms = 5_000): Promise<{ got: string; closed: boolean }> {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1', () => s.write(text));
    let got = '';
    const done = (closed: boolean) => {
      clearTimeout(timer);
      s.destroy();
      resolve({ got, closed });
    };
    const timer = setTimeout(() => done(false), ms);
    s.on('data', (b) => {
      got += b.toString();
      if (got.length >= text.length) done(false);
    });
    s.on('error', () => {});
    s.on('close', () => done(true));
  });
}

const PROXIES = fileURLToPath(new URL('../proxies.mjs', import.meta.url));

/** A runner process: a ProxyHost forked, then `body`; it prints the host's pid and stays up. */
function spawnRunner(body: string) {
  const runner = spawn(
    process.execPath,
    [
      '--input-type=module',
      '-e',
      `const { ProxyHost } = await import(${JSON.stringify(PROXIES)});
       const host = await ProxyHost.spawn();
       ${body}
       console.log(host.pid);
       setInterval(() => {}, 1000);`,
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  let out = '';
  const pid = new Promise<number>((resolve) =>
    runner.stdout.on('data', (b) => {
      out += String(b);
      if (out.includes('\n')) resolve(Number(out.split('\n')[0]));
    }),
  );
  return { runner, pid, out: () => out };
}

describe('ProxyHost', () => {
  let echo: net.Server;
  let echoPort: number;
  let host: ProxyHost;

  beforeAll(async () => {
    echo = net.createServer((s) => {
      s.on('error', () => {});
      s.pipe(s);
    });
    await new Promise<void>((r) => echo.listen(0, '127.0.0.1', () => r()));
    echoPort = (echo.address() as net.AddressInfo).port;
    host = await ProxyHost.spawn();
  });

  afterAll(async () => {
    await host?.close();
    echo.close();
  });

  it('carries bytes in another process and applies faults and upstreams when they settle', async () => {
    expect(host.pid).not.toBe(process.pid);
    const proxy = await host.start([]);
    expect(proxy.address).toBe(`127.0.0.1:${proxy.port}`);
    // No upstream: refused (closed at once).
    expect(await exchange(proxy.port, 'x')).toEqual({ got: '', closed: true });
    await proxy.setUpstreams([{ host: '127.0.0.1', port: echoPort }]);
    expect(await exchange(proxy.port, 'hello')).toEqual({ got: 'hello', closed: false });
    await proxy.setFault({ kind: 'blackhole' });
    expect(await exchange(proxy.port, 'lost', 500)).toEqual({ got: '', closed: false });
    await proxy.setFault({ kind: 'pass' });
    // One connection held open, counted by the host, then reset by resetAll.
    const s = net.connect(proxy.port, '127.0.0.1');
    const closed = new Promise<void>((r) => s.on('close', () => r()));
    s.on('error', () => {});
    await new Promise<void>((r) => s.once('connect', () => r()));
    let open = 0;
    for (let i = 0; i < 20 && open === 0; i++) {
      await new Promise((r) => setTimeout(r, 25));
      open = await proxy.open();
    }
    expect(open).toBe(1);
    await proxy.resetAll();
    await closed;
    expect((await proxy.stats()).resets).toBeGreaterThanOrEqual(1);
    await proxy.close();
    await expect(proxy.open()).rejects.toThrow(/no proxy/);
  });

  it('exits when its runner is killed (its IPC channel closes), a proxy listening', async () => {
    const { runner, pid } = spawnRunner('await host.start([]);');
    const hostPid = await pid;
    expect(alive(hostPid)).toBe(true);
    runner.kill('SIGKILL');
    expect(await until(() => !alive(hostPid), 5_000)).toBe(true);
  });

  it("leaves a runner's Ctrl-C to the runner: its own handler stops the world, the host included", async () => {
    // The chaos runner stops the stack, the private servers and the proxies on SIGINT before it exits.
    // The host used to install a handler of its own that exited the runner at once: every service and
    // server of the world was left running.
    const { runner, pid, out } = spawnRunner(`
      process.once('SIGINT', async () => {
        await new Promise((r) => setTimeout(r, 300)); // the world's own stops take time
        await host.close();
        console.log('closed');
        process.exit(130);
      });`);
    const exited = new Promise<number | null>((r) => runner.once('exit', (code) => r(code)));
    expect(alive(await pid)).toBe(true);
    runner.kill('SIGINT');
    expect(await exited).toBe(130);
    expect(out()).toContain('closed');
    expect(alive(await pid)).toBe(false);
  });
});
