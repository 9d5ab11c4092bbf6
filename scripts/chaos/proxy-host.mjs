// The chaos world's TCP proxies (the balancer in front of the gateways, the fault proxies in front of
// PostgreSQL, Redis and each adapter), in a process of their own that the runner forks and drives over
// IPC (proxies.mjs). Every byte of the traffic crosses them: here, their work and their event-loop
// stalls stay out of the runner's event loop, which times the requests.
import { TcpProxy } from '@dnc/devstack';

const proxies = new Map();
let lastId = 0;

const proxyOf = (id) => {
  const proxy = proxies.get(id);
  if (!proxy) throw new Error(`no proxy ${id}`);
  return proxy;
};

/** The operations the runner asks for; each answers a value that IPC can carry. */
const OPS = {
  start: async ({ upstreams }) => {
    const proxy = await TcpProxy.start(upstreams);
    const id = ++lastId;
    proxies.set(id, proxy);
    return { id, port: proxy.port };
  },
  setUpstreams: ({ id, upstreams }) => proxyOf(id).setUpstreams(upstreams),
  setFault: ({ id, fault }) => proxyOf(id).setFault(fault),
  resetAll: ({ id }) => proxyOf(id).resetAll(),
  stallAll: ({ id }) => proxyOf(id).stallAll(),
  open: ({ id }) => proxyOf(id).open,
  stats: ({ id }) => ({ ...proxyOf(id).stats }),
  close: async ({ id }) => {
    await proxyOf(id).close();
    proxies.delete(id);
  },
};

const answer = (message) => {
  if (process.connected) process.send(message);
};

process.on('message', async ({ seq, op, args }) => {
  try {
    if (!Object.hasOwn(OPS, op)) throw new Error(`unknown operation ${op}`);
    answer({ seq, value: (await OPS[op](args)) ?? null });
  } catch (error) {
    answer({ seq, error: error.message });
  }
});
// The runner gone (exited, killed, crashed): nothing left to carry.
process.on('disconnect', () => process.exit(0));
// A socket a fault cuts must not end the proxies, as it did not end the runner that hosted them.
process.on('uncaughtException', (error) =>
  process.stderr.write(`chaos proxy host: ignored: ${error.message}\n`),
);
answer({ ready: true });
