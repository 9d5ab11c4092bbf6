import net from 'node:net';

/** Ports already handed out by this process, so two processes of any stack never get the same one. */
const allocated = new Set<number>();

function canBind(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '0.0.0.0', () => server.close(() => resolve(true)));
  });
}

/**
 * A free port for a service of the stack. Picked below the kernel's ephemeral range (32768 and up),
 * which outgoing connections draw from: a port taken from that range can be grabbed by a client
 * socket before the service binds it.
 */
export async function freePort(): Promise<number> {
  for (let attempt = 0; attempt < 200; attempt++) {
    const port = 20_000 + Math.floor(Math.random() * 12_000);
    if (allocated.has(port)) continue;
    if (await canBind(port)) {
      allocated.add(port);
      return port;
    }
  }
  throw new Error('no free port between 20000 and 32000');
}
