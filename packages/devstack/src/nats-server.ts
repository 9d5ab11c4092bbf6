import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { NATS_PROVISIONER, type NatsCredentials, natsPermissions } from '@dnc/kit';
import { freePort } from './ports.js';

const CANDIDATES = ['/usr/sbin/nats-server', '/usr/bin/nats-server', '/usr/local/bin/nats-server'];

/** The nats-server binary: DNC_NATS_SERVER_BIN, else PATH, else the usual Debian places. */
export function natsServerBinary(): string | undefined {
  const explicit = process.env['DNC_NATS_SERVER_BIN'];
  if (explicit) return existsSync(explicit) ? explicit : undefined;
  const which = spawnSync('sh', ['-c', 'command -v nats-server'], { encoding: 'utf8' });
  const found = which.status === 0 ? which.stdout.trim() : '';
  return found || CANDIDATES.find((c) => existsSync(c));
}

function reachable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: '127.0.0.1', port }, () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/**
 * The NATS server configuration of a stack: JetStream on, one user per identity that uses NATS
 * with its password and the permissions of `natsPermissions`, nobody anonymous.
 */
export function natsServerConfig(opts: {
  port: number;
  storeDir: string;
  prefix: string;
  passwords: Record<string, string>;
}): string {
  const users = Object.entries(opts.passwords).map(([user, password]) => {
    const perms = natsPermissions(user, opts.prefix);
    if (!perms) throw new Error(`no NATS permissions for ${user}`);
    return {
      user,
      password,
      permissions: { publish: { allow: perms.publish }, subscribe: { allow: perms.subscribe } },
    };
  });
  // NATS configuration accepts JSON; quoted strings are taken literally (no $variables).
  return JSON.stringify(
    {
      listen: `127.0.0.1:${opts.port}`,
      server_name: 'dnc_stack',
      jetstream: {
        store_dir: opts.storeDir,
        max_memory_store: 256 * 1024 * 1024,
        max_file_store: 4 * 1024 ** 3,
      },
      authorization: { users },
    },
    null,
    2,
  );
}

/**
 * A nats-server of one stack, started from the machine's binary with a generated configuration
 * (per-service users and subject permissions), instead of an unauthenticated shared server.
 */
export class LocalNatsServer {
  private constructor(
    readonly url: string,
    readonly dir: string,
    private readonly passwords: Record<string, string>,
    private readonly child: ChildProcess,
    private readonly exited: Promise<void>,
  ) {}

  static async start(opts: { dir: string; prefix?: string; users: string[]; logFile?: string }) {
    const binary = natsServerBinary();
    if (!binary)
      throw new Error(
        'nats-server not found (PATH, /usr/sbin): install it (apt-get install nats-server) or set DNC_NATS_SERVER_BIN',
      );
    mkdirSync(opts.dir, { recursive: true, mode: 0o700 });
    const passwords: Record<string, string> = {};
    for (const u of new Set([NATS_PROVISIONER, ...opts.users]))
      passwords[u] = randomBytes(18).toString('base64url');
    const port = await freePort();
    const config = path.join(opts.dir, 'nats.conf');
    writeFileSync(
      config,
      natsServerConfig({
        port,
        storeDir: path.join(opts.dir, 'jetstream'),
        prefix: opts.prefix ?? '',
        passwords,
      }),
      { mode: 0o600 },
    );
    const args = ['-c', config, ...(opts.logFile ? ['-l', opts.logFile] : [])];
    const child = spawn(binary, args, { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr?.on('data', (c) => {
      stderr += c;
    });
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    const deadline = Date.now() + 10_000;
    while (!(await reachable(port))) {
      if (child.exitCode !== null || Date.now() > deadline) {
        child.kill('SIGKILL');
        throw new Error(`nats-server did not start: ${stderr.slice(-2000)}`);
      }
      await new Promise((r) => setTimeout(r, 50));
    }
    return new LocalNatsServer(`nats://127.0.0.1:${port}`, opts.dir, passwords, child, exited);
  }

  credentials(user: string): Required<NatsCredentials> {
    const password = this.passwords[user];
    if (!password) throw new Error(`no NATS user ${user}`);
    return { user, password };
  }

  /** DNC_NATS_USER / DNC_NATS_PASSWORD of one process. */
  env(user: string): Record<string, string> {
    const c = this.credentials(user);
    return { DNC_NATS_USER: c.user, DNC_NATS_PASSWORD: c.password };
  }

  async stop(): Promise<void> {
    if (this.child.exitCode === null && this.child.signalCode === null) {
      this.child.kill('SIGTERM');
      const t = setTimeout(() => this.child.kill('SIGKILL'), 5_000);
      await this.exited;
      clearTimeout(t);
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}
