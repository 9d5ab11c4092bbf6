import net from 'node:net';

/**
 * Integration and e2e tests run against real servers, taken from the environment (DATABASE_URL,
 * REDIS_URL, NATS_URL) with the local defaults. `.ci/run` starts any that is down; here we only
 * fail early, with the server named, when one cannot be reached.
 */
const servers = [
  ['PostgreSQL', process.env['DATABASE_URL'] ?? 'postgres://postgres@127.0.0.1:5432/postgres', 5432],
  ['Redis', process.env['REDIS_URL'] ?? 'redis://127.0.0.1:6379', 6379],
  ['NATS', process.env['NATS_URL'] ?? 'nats://127.0.0.1:4222', 4222],
] as const;

function reachable(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host, port, timeout: 2000 });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
    socket.once('timeout', () => {
      socket.destroy();
      resolve(false);
    });
  });
}

export default async function setup(): Promise<void> {
  const down: string[] = [];
  for (const [name, url, defaultPort] of servers) {
    const u = new URL(url);
    if (!(await reachable(u.hostname, Number(u.port || defaultPort)))) down.push(`${name} (${u.host})`);
  }
  if (down.length > 0) {
    throw new Error(
      `test servers unreachable: ${down.join(', ')}. Start them (see README "Running the tests").`,
    );
  }
}
