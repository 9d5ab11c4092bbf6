import { closeSync, mkdirSync, openSync, readFileSync, rmSync, statSync, writeSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';

/** Ports already handed out by this process, so two processes of any stack never get the same one. */
const allocated = new Set<number>();

/**
 * Ports handed out by every process on this machine that uses devstack (parallel test runs, the
 * benchmark, the chaos suite): a file per port, created exclusively, holding the owner's pid. A port
 * picked by one run is never picked by another between its pick and its service's bind; the files of
 * a process that ended (or older than a day) are taken over.
 */
const RESERVATIONS = path.join(tmpdir(), 'dnc-devstack-ports');
const STALE_MS = 24 * 3_600_000;

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function reserve(port: number): boolean {
  const file = path.join(RESERVATIONS, String(port));
  try {
    mkdirSync(RESERVATIONS, { recursive: true });
    const fd = openSync(file, 'wx');
    writeSync(fd, String(process.pid));
    closeSync(fd);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') return true;
  }
  try {
    const owner = Number(readFileSync(file, 'utf8'));
    const old = Date.now() - statSync(file).mtimeMs > STALE_MS;
    if (owner !== process.pid && (old || !Number.isInteger(owner) || !alive(owner))) {
      rmSync(file, { force: true });
      return reserve(port);
    }
  } catch {
    // removed meanwhile by its owner's taker: try another port
  }
  return false;
}

function canBind(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '0.0.0.0', () => server.close(() => resolve(true)));
  });
}

/** Where `freePort` picks from: below the kernel's ephemeral range, above the local stack's block. */
export const FREE_PORT_RANGE = { from: 20_000, to: 32_000 } as const;

/**
 * The first port of `npm start`'s fixed block (about 32 ports: every process's gRPC, admin, health and
 * metrics listener). Below the kernel's ephemeral range and below `FREE_PORT_RANGE`, so neither a client
 * socket of a process started earlier nor a test stack running beside it takes a port of the block
 * before its process binds it (at 50051 the job-worker's 50078 was held by a client socket when it
 * bound it: `listen EADDRINUSE`, and `npm start` failed).
 */
export const LOCAL_STACK_BASE_PORT = 15_051;

/**
 * The kernel's ephemeral port range, which outgoing connections draw their local port from (Linux:
 * /proc/sys/net/ipv4/ip_local_port_range; elsewhere the IANA range 49152-65535).
 */
export function ephemeralPortRange(): { from: number; to: number } {
  try {
    const [from, to] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8')
      .trim()
      .split(/\s+/)
      .map(Number);
    if (Number.isInteger(from) && Number.isInteger(to)) return { from: from!, to: to! };
  } catch {
    // not Linux
  }
  return { from: 49_152, to: 65_535 };
}

/**
 * A free port for a service of the stack. Picked below the kernel's ephemeral range (32768 and up),
 * which outgoing connections draw from: a port taken from that range can be grabbed by a client
 * socket before the service binds it.
 */
export async function freePort(): Promise<number> {
  const { from, to } = FREE_PORT_RANGE;
  for (let attempt = 0; attempt < 400; attempt++) {
    const port = from + Math.floor(Math.random() * (to - from));
    if (allocated.has(port)) continue;
    if (!reserve(port)) continue;
    if (await canBind(port)) {
      allocated.add(port);
      return port;
    }
  }
  throw new Error(`no free port between ${from} and ${to}`);
}
