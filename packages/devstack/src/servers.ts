import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { chmodSync, chownSync, mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { freePort } from './ports.js';

// Private servers for fault tests and the chaos suite: restarting the shared PostgreSQL, Redis or
// NATS would break every other suite running at the same time, so whoever restarts one starts its own.

async function waitPort(port: number, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const ok = await new Promise<boolean>((resolve) => {
      const c = net.connect({ port, host: '127.0.0.1' });
      c.once('connect', () => {
        c.destroy();
        resolve(true);
      });
      c.once('error', () => resolve(false));
    });
    if (ok) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`port ${port} did not open`);
}

export interface PrivateServer {
  url: string;
  restart(downMs?: number): Promise<void>;
  /**
   * Signal the server process (servers run as this process's child: NATS, Redis). SIGSTOP freezes it:
   * its connections stay open and nothing answers; SIGCONT resumes it.
   */
  signal?(signal: NodeJS.Signals): void;
  stop(): Promise<void>;
}

/** A server run as a child process on `port`: started, stopped (SIGTERM, awaited), restarted. */
async function childServer(
  url: string,
  port: number,
  command: string,
  args: string[],
  cleanup = () => {},
): Promise<PrivateServer> {
  let child: ChildProcess | undefined;
  const start = async () => {
    child = spawn(command, args, { stdio: 'ignore' });
    await waitPort(port);
  };
  const halt = async () => {
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((r) => child!.once('exit', r));
    // A stopped (SIGSTOP) server would not act on SIGTERM until continued.
    child.kill('SIGCONT');
    child.kill('SIGTERM');
    await exited;
  };
  await start();
  return {
    url,
    async restart(downMs = 1_000) {
      await halt();
      await new Promise((r) => setTimeout(r, downMs));
      await start();
    },
    signal(signal) {
      if (child && child.exitCode === null && child.signalCode === null) child.kill(signal);
    },
    async stop() {
      await halt();
      cleanup();
    },
  };
}

/** nats-server with JetStream and file storage that survives its own restart. */
export async function privateNats(): Promise<PrivateServer> {
  const port = await freePort();
  const dir = mkdtempSync(path.join(tmpdir(), 'dnc-nats-'));
  return childServer(
    `nats://127.0.0.1:${port}`,
    port,
    'nats-server',
    ['-js', '-a', '127.0.0.1', '-p', String(port), '-sd', dir],
    () => rmSync(dir, { recursive: true, force: true }),
  );
}

const PG_BIN = '/usr/lib/postgresql/15/bin';

/** A throwaway PostgreSQL 15 cluster (trust auth), run as the postgres user when we are root. */
export async function privatePostgres(): Promise<PrivateServer> {
  const port = await freePort();
  const dir = mkdtempSync(path.join(tmpdir(), 'dnc-pg-'));
  const data = path.join(dir, 'data');
  const asRoot = process.getuid?.() === 0;
  if (asRoot) {
    const uid = Number(execFileSync('id', ['-u', 'postgres']).toString());
    const gid = Number(execFileSync('id', ['-g', 'postgres']).toString());
    chownSync(dir, uid, gid);
    chmodSync(dir, 0o700);
  }
  const run = (bin: string, args: string[]) =>
    asRoot
      ? execFileSync('runuser', ['-u', 'postgres', '--', path.join(PG_BIN, bin), ...args], {
          stdio: 'ignore',
        })
      : execFileSync(path.join(PG_BIN, bin), args, { stdio: 'ignore' });
  run('initdb', ['-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync']);
  const options = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200`;
  const start = () => run('pg_ctl', ['-D', data, '-o', options, '-w', '-l', path.join(dir, 'log'), 'start']);
  const halt = () => run('pg_ctl', ['-D', data, '-m', 'fast', '-w', 'stop']);
  start();
  await waitPort(port);
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    async restart(downMs = 1_000) {
      halt();
      await new Promise((r) => setTimeout(r, downMs));
      start();
      await waitPort(port);
    },
    async stop() {
      try {
        halt();
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}

/** redis-server without persistence, on its own port. */
export async function privateRedis(): Promise<PrivateServer> {
  const port = await freePort();
  return childServer(`redis://127.0.0.1:${port}`, port, 'redis-server', [
    '--bind',
    '127.0.0.1',
    '--port',
    String(port),
    '--save',
    '',
    '--appendonly',
    'no',
  ]);
}
