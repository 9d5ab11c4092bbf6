import { randomBytes } from 'node:crypto';
import net from 'node:net';
import { freePort } from './ports.js';

/**
 * What the proxy does to the bytes it carries, changeable at run time:
 * - `pass`: forwards both ways;
 * - `slow`: delays every chunk by `delayMs` (both ways);
 * - `hang`: holds every byte (both ways) until the mode changes, then delivers what it held;
 * - `blackhole`: accepts and swallows every byte, answers nothing, closes nothing;
 * - `garbage`: the client receives random bytes instead of the server's answer;
 * - `mute`: the client's bytes reach the server, the server's answers are swallowed (a request that
 *   took effect and whose answer is lost when the connection is cut before it arrives);
 * - `reset`: every connection, open or new, is reset (RST);
 * - `stall`: every new connection's client receives, instead of its server's first bytes, the header
 *   of a long TLS record, then nothing more (its own bytes still reach the server; `stallAll` does
 *   it to the open ones).
 */
export type Fault =
  | { kind: 'pass' }
  | { kind: 'slow'; delayMs: number }
  | { kind: 'hang' }
  | { kind: 'blackhole' }
  | { kind: 'garbage' }
  | { kind: 'mute' }
  | { kind: 'reset' }
  | { kind: 'stall' };

export interface Upstream {
  host: string;
  port: number;
}

interface Pair {
  client: net.Socket;
  server?: net.Socket;
  held: { toServer: Buffer[]; toClient: Buffer[] };
  /** The client got a TLS record header and will get nothing more from its server (`stallAll`). */
  stalled?: boolean;
  /** Accepted under `stall`: the server's first bytes are replaced by the header. */
  stallFirst?: boolean;
}

/**
 * The header of a TLS 1.2/1.3 application-data record of 16,384 bytes: what a client's TLS layer
 * reads when random bytes (a broken middlebox, `garbage` cut inside a real header) happen to look
 * like one. It then waits for 16 KiB that complete the record before it reads anything else.
 */
const TLS_RECORD_HEADER = Buffer.from([0x17, 0x03, 0x03, 0x40, 0x00]);

/**
 * A TCP proxy written for the chaos suite: faults between a caller and a server (adapter, Redis,
 * Postgres), and, with several upstreams, the small round-robin balancer in front of the gateways
 * (one connection to one upstream; a refused upstream is skipped).
 */
export class TcpProxy {
  private fault: Fault = { kind: 'pass' };
  private readonly pairs = new Set<Pair>();
  private next = 0;
  readonly stats = { connections: 0, refused: 0, resets: 0 };

  private constructor(
    private readonly server: net.Server,
    readonly port: number,
    private upstreams: Upstream[],
  ) {}

  static async start(upstreams: Upstream[], port?: number): Promise<TcpProxy> {
    const listenPort = port ?? (await freePort());
    const server = net.createServer();
    const proxy = new TcpProxy(server, listenPort, upstreams);
    server.on('connection', (socket) => proxy.accept(socket));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(listenPort, '127.0.0.1', () => resolve());
    });
    return proxy;
  }

  get address(): string {
    return `127.0.0.1:${this.port}`;
  }

  setUpstreams(upstreams: Upstream[]): void {
    this.upstreams = upstreams;
  }

  setFault(fault: Fault): void {
    const was = this.fault;
    this.fault = fault;
    if (fault.kind === 'reset') for (const p of this.pairs) this.reset(p);
    if (was.kind === 'hang' && fault.kind !== 'hang') for (const p of this.pairs) this.flush(p);
  }

  /** Reset every open connection once (a dropped connection mid-request); the mode stays. */
  resetAll(): void {
    for (const p of this.pairs) this.reset(p);
  }

  /**
   * Once: every open connection's client receives the header of a long TLS record and then nothing
   * more from its server, while its own bytes still reach the server; the sockets stay open and the
   * mode stays. New connections are not touched.
   */
  stallAll(): void {
    for (const p of this.pairs) {
      p.stalled = true;
      p.client.write(TLS_RECORD_HEADER);
    }
  }

  get open(): number {
    return this.pairs.size;
  }

  async close(): Promise<void> {
    for (const p of this.pairs) {
      p.client.destroy();
      p.server?.destroy();
    }
    await new Promise((r) => this.server.close(r));
  }

  private reset(p: Pair): void {
    this.stats.resets++;
    p.client.resetAndDestroy();
    p.server?.resetAndDestroy();
    this.pairs.delete(p);
  }

  private flush(p: Pair): void {
    for (const b of p.held.toServer.splice(0)) p.server?.write(b);
    for (const b of p.held.toClient.splice(0)) p.client.write(b);
  }

  private accept(client: net.Socket): void {
    this.stats.connections++;
    const pair: Pair = { client, held: { toServer: [], toClient: [] } };
    this.pairs.add(pair);
    client.setNoDelay(true);
    const done = () => {
      this.pairs.delete(pair);
      client.destroy();
      pair.server?.destroy();
    };
    client.on('error', done);
    client.on('close', done);
    if (this.fault.kind === 'reset') {
      this.reset(pair);
      return;
    }
    if (this.fault.kind === 'stall') pair.stallFirst = true;
    client.on('data', (chunk) => this.carry(pair, chunk, 'toServer'));
    this.connect(pair, 0, done);
  }

  private connect(pair: Pair, attempt: number, done: () => void): void {
    if (this.upstreams.length === 0 || attempt >= this.upstreams.length) {
      this.stats.refused++;
      done();
      return;
    }
    const upstream = this.upstreams[this.next++ % this.upstreams.length]!;
    const server = net.connect(upstream.port, upstream.host);
    server.setNoDelay(true);
    let connected = false;
    server.once('connect', () => {
      connected = true;
      pair.server = server;
      for (const b of pair.held.toServer.splice(0)) this.carry(pair, b, 'toServer');
    });
    server.on('data', (chunk) => this.carry(pair, chunk, 'toClient'));
    server.on('error', () => {
      if (!connected && !pair.client.destroyed) this.connect(pair, attempt + 1, done);
      else done();
    });
    server.on('close', () => {
      if (connected) done();
    });
  }

  private carry(pair: Pair, chunk: Buffer, direction: 'toServer' | 'toClient'): void {
    const f = this.fault;
    const target = direction === 'toServer' ? pair.server : pair.client;
    if (f.kind === 'blackhole' || (pair.stalled && direction === 'toClient')) return;
    if (f.kind === 'mute' && direction === 'toClient') return;
    if (pair.stallFirst && direction === 'toClient') {
      pair.stalled = true;
      pair.client.write(TLS_RECORD_HEADER);
      return;
    }
    if (f.kind === 'reset') {
      this.reset(pair);
      return;
    }
    if (f.kind === 'hang' || !target) {
      pair.held[direction].push(chunk);
      return;
    }
    const out = f.kind === 'garbage' && direction === 'toClient' ? randomBytes(chunk.length) : chunk;
    if (f.kind === 'slow') {
      setTimeout(() => {
        if (!target.destroyed) target.write(out);
      }, f.delayMs);
      return;
    }
    target.write(out);
  }
}
