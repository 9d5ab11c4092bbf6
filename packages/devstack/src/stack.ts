import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createWriteStream, mkdirSync, type WriteStream } from 'node:fs';
import path from 'node:path';
import type { DescService } from '@bufbuild/protobuf';
import { type Client, createClient, type Transport } from '@connectrpc/connect';
import { LIVE_COUNTRIES } from '@dnc/api-contract/limits';
import { ensureDatabase, grpcTransport, type Identity, rpcTransport, type Security } from '@dnc/kit';
import { healthv1 } from '@dnc/proto';
import { runAdmin } from './admin.js';
import { processIdentity, StackPki } from './identities.js';
import {
  layOutStack,
  type ProcessLayout,
  type ProcessName,
  type StackAddresses,
  type StackOptions,
} from './layout.js';
import type { LocalNatsServer } from './nats-server.js';
import { NATS_USERS, startPrivateNats } from './private-nats.js';

export type { ProcessName, Replicas, StackAddresses, StackOptions } from './layout.js';
export { LIVE_COUNTRIES };

interface Managed extends ProcessLayout {
  child?: ChildProcess;
  exited?: Promise<number | null>;
}

/**
 * Every service as its own process (`node scripts/run.js <role>`), wired by environment, with one
 * database and one NATS prefix. Used by `npm start`, the end-to-end tests and the benchmark.
 */
export class Stack {
  readonly processes = new Map<ProcessName, Managed>();
  readonly addresses: StackAddresses;
  readonly baseUrl: string;
  private readonly output: string[] = [];
  private readonly files = new Map<ProcessName, WriteStream>();

  private constructor(
    readonly options: StackOptions,
    addresses: StackAddresses,
    readonly commonEnv: Record<string, string>,
    /** The stack's local CA and certificates (one per process, the operator's, test callers'). */
    readonly pki: StackPki,
    /** The stack's own nats-server with per-service users (privateNats). */
    readonly nats?: LocalNatsServer,
  ) {
    this.addresses = addresses;
    this.baseUrl = addresses.gateway;
  }

  static async create(options: StackOptions): Promise<Stack> {
    const layout = await layOutStack(options);
    const pki = await StackPki.create();
    const nats = options.privateNats
      ? await startPrivateNats(pki, options.natsPrefix, layout.countries)
      : undefined;
    if (nats) layout.commonEnv['NATS_URL'] = nats.url;
    const stack = new Stack(options, layout.addresses, layout.commonEnv, pki, nats);
    for (const { name, role, env } of layout.processes) {
      const identity = processIdentity(name);
      // Each process its own certificate: its identity in a SPIFFE URI, signed by the stack's CA.
      await pki.write(name, identity);
      stack.processes.set(name, {
        name,
        role,
        env: {
          ...env,
          ...pki.env(name),
          ...(nats && NATS_USERS.test(identity) ? nats.env(identity) : {}),
          ...options.processEnv?.[name],
        },
      });
    }
    await pki.write('operator', 'operator');
    if (options.logDir) mkdirSync(options.logDir, { recursive: true });
    return stack;
  }

  /** Start every process (dependencies first) and wait until each one is serving. */
  async up(): Promise<this> {
    // Created once here rather than raced by every process.
    await ensureDatabase(this.options.databaseUrl);
    const skip = new Set(this.options.skip ?? []);
    const all = [...this.processes.keys()];
    const of = (...bases: string[]) => all.filter((n) => bases.includes(n.split('#')[0]!));
    const order: ProcessName[][] = [
      ['quota', ...all.filter((n) => n.startsWith('adapter-'))],
      of('admission', 'job-scheduler', 'job-worker'),
      [...of('gateway'), 'dashboard'],
    ];
    for (const group of order) {
      await Promise.all(group.filter((n) => !skip.has(n)).map((n) => this.start(n)));
    }
    return this;
  }

  async start(name: ProcessName, timeoutMs = 45_000): Promise<void> {
    const p = this.processes.get(name);
    if (!p) throw new Error(`unknown process ${name}`);
    // Already running (a killed process has a signalCode and no exitCode).
    if (p.child && p.child.exitCode === null && p.child.signalCode === null) return;
    // DNC_PROFILE_DIR=<dir>: every process writes a V8 CPU profile there when it exits (bench work).
    const profile = process.env['DNC_PROFILE_DIR'];
    const nodeArgs = profile
      ? ['--cpu-prof', `--cpu-prof-dir=${profile}`, `--cpu-prof-name=${name}.cpuprofile`]
      : [];
    const child = spawn(
      process.execPath,
      [...nodeArgs, path.join(this.options.root, 'scripts/run.js'), p.role],
      {
        env: { ...process.env, ...this.commonEnv, ...p.env },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    p.child = child;
    p.exited = new Promise((resolve) => child.once('exit', (code) => resolve(code)));
    const sink = (chunk: Buffer) => {
      const text = chunk.toString('utf8');
      this.output.push(`[${name}] ${text}`);
      if (this.output.length > 200_000) this.output.splice(0, 100_000);
      this.file(name)?.write(text);
      if (this.options.echo) {
        for (const line of text.split('\n')) if (line) process.stdout.write(`${name.padEnd(13)} | ${line}\n`);
      }
    };
    child.stdout?.on('data', sink);
    child.stderr?.on('data', sink);
    await this.waitReady(name, timeoutMs);
  }

  private file(name: ProcessName): WriteStream | undefined {
    if (!this.options.logDir) return undefined;
    let f = this.files.get(name);
    if (!f) {
      f = createWriteStream(path.join(this.options.logDir, `${name}.log`), { flags: 'a' });
      this.files.set(name, f);
    }
    return f;
  }

  /** Wait until the process serves: gRPC health SERVING, or the gateway's /v1/ready 200. */
  async waitReady(name: ProcessName, timeoutMs = 45_000): Promise<void> {
    const p = this.processes.get(name)!;
    const deadline = Date.now() + timeoutMs;
    const gateway = p.role === 'gateway';
    // The plaintext health listener, as a kubelet probe asks (no client certificate).
    const health = gateway
      ? undefined
      : createClient(healthv1.Health, grpcTransport(`http://127.0.0.1:${p.env['DNC_HEALTH_PORT']}`));
    while (Date.now() < deadline) {
      if (p.child?.exitCode !== null && p.child?.exitCode !== undefined) {
        throw new Error(
          `${name} exited with code ${p.child.exitCode} while starting:\n${this.logsOf(name).slice(-4000)}`,
        );
      }
      try {
        if (health) {
          const r = await health.check({ service: '' }, { timeoutMs: 1000 });
          if (r.status === healthv1.HealthCheckResponse_ServingStatus.SERVING) return;
        } else {
          const r = await fetch(`http://127.0.0.1:${p.env['DNC_GATEWAY_PORT']}/v1/ready`, {
            signal: AbortSignal.timeout(1000),
          });
          if (r.status === 200) return;
        }
      } catch {
        // not up yet
      }
      await new Promise((r) => setTimeout(r, 150));
    }
    throw new Error(
      `${name} did not become ready within ${timeoutMs} ms:\n${this.logsOf(name).slice(-4000)}`,
    );
  }

  /** Stop a process with a signal (default SIGTERM: graceful) and wait for it to exit. */
  async stop(name: ProcessName, signal: NodeJS.Signals = 'SIGTERM'): Promise<number | null> {
    const p = this.processes.get(name);
    if (!p?.child || p.child.exitCode !== null || p.child.signalCode !== null)
      return p?.child?.exitCode ?? null;
    p.child.kill(signal);
    const code = await Promise.race([
      p.exited!,
      new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), 40_000)),
    ]);
    if (code === 'timeout') {
      p.child.kill('SIGKILL');
      return p.exited!;
    }
    return code;
  }

  /** `kill -9`: no drain, no cleanup. */
  kill(name: ProcessName): Promise<number | null> {
    return this.stop(name, 'SIGKILL');
  }

  child(name: ProcessName): ChildProcess | undefined {
    return this.processes.get(name)?.child;
  }

  /** Everything every process wrote, for leak checks. */
  logs(): string {
    return this.output.join('');
  }

  logsOf(name: ProcessName): string {
    const prefix = `[${name}] `;
    return this.output
      .filter((l) => l.startsWith(prefix))
      .map((l) => l.slice(prefix.length))
      .join('');
  }

  /** Environment for `dnc-admin` against this stack: the operator's certificate, the addresses. */
  adminEnv(): Record<string, string> {
    return {
      ...this.pki.env('operator'),
      ...(this.options.insecurePlaintext ? { DNC_INSECURE_PLAINTEXT: '1' } : {}),
      DNC_ADMISSION_ADMIN_ADDR: this.addresses.admissionAdmin,
      DNC_QUOTA_ADMIN_ADDR: this.addresses.quotaAdmin,
      DNC_JOBS_ADMIN_ADDR: this.addresses.jobsAdmin,
      DNC_DASHBOARD_ADDR: this.addresses.dashboardAdmin,
      DNC_GATEWAY_URL: this.addresses.gateway,
      ...Object.fromEntries(
        Object.entries(this.addresses.adapterAdmins).map(([c, a]) => [
          `DNC_ADAPTER_ADDR_${c.toUpperCase()}`,
          a,
        ]),
      ),
    };
  }

  /** Run `dnc-admin` and parse its JSON output; rejects with its one-line error on failure. */
  admin(args: string[], input?: string): Promise<unknown> {
    return runAdmin(this.options.root, this.adminEnv(), args, input);
  }

  async close(): Promise<void> {
    const names = [...this.processes.keys()].reverse();
    await Promise.all(names.map((n) => this.stop(n)));
    await Promise.all([...this.files.values()].map((f) => new Promise((r) => f.end(r))));
    await this.nats?.stop();
    this.pki.close();
  }

  /** A caller of this stack with a fresh certificate of `identity` (tests, the benchmark). */
  async security(identity: Identity): Promise<Security> {
    if (this.options.insecurePlaintext)
      return { mode: 'plaintext', identity, trustDomain: this.pki.trustDomain };
    return this.pki.security(identity);
  }

  /** A Connect transport to `address` as `caller`, accepting only a server that proves `peer`. */
  transport(caller: Security, peer: Identity, address: string): Transport {
    return rpcTransport(address, [], { security: caller, peer });
  }

  /** A client of `service` at `address`, called as `caller`, the server proving `peer`. */
  client<S extends DescService>(service: S, caller: Security, peer: Identity, address: string): Client<S> {
    return createClient(service, this.transport(caller, peer, address));
  }

  /** Re-issue a process's certificate on disk (a rotation; the process picks it up on its own). */
  async rotate(name: ProcessName): Promise<void> {
    await this.pki.write(name, processIdentity(name));
  }
}

/** A unique, valid identifier for per-test resources (database name, NATS prefix). */
export function uniqueSuffix(): string {
  return `${Date.now().toString(36)}${randomBytes(3).toString('hex')}`;
}
