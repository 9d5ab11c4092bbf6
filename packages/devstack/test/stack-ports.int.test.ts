import { afterEach, describe, expect, it, vi } from 'vitest';
import { layOutStack, type StackOptions } from '../src/layout.js';
import { ephemeralPortRange, FREE_PORT_RANGE, LOCAL_STACK_BASE_PORT } from '../src/ports.js';

// `npm start`'s stack listens on a fixed block of ports. A port of that block inside the kernel's
// ephemeral range can be taken as the local port of a client socket (a connection to PostgreSQL,
// NATS or another service of a process started earlier) before its own process binds it, and the
// start fails with `listen EADDRINUSE` (seen with the block at 50051: the job-worker's 50078).

/** The options scripts/stack/start.js lays its stack out with (nothing here binds a port). */
const localStack = (basePort: number): StackOptions => ({
  root: '/nonexistent',
  databaseUrl: 'postgres://postgres@127.0.0.1:5432/dnc',
  redisUrl: 'redis://127.0.0.1:6379',
  natsUrl: 'nats://127.0.0.1:4222',
  gatewayPort: 8080,
  dashboardPort: 8090,
  basePort,
});

/** Every port a process of the layout listens on. */
async function listenPorts(options: StackOptions): Promise<number[]> {
  const layout = await layOutStack(options);
  const ports = new Set<number>();
  for (const p of layout.processes) {
    for (const [name, value] of Object.entries(p.env))
      if (/^DNC_\w*PORT$/.test(name)) ports.add(Number(value));
  }
  return [...ports].sort((a, b) => a - b);
}

describe('the local stack ports', () => {
  afterEach(() => {
    vi.restoreAllMocks();
  });

  it('lie below the kernel ephemeral range and outside the range test stacks pick from', async () => {
    const warn = vi.spyOn(process, 'emitWarning').mockImplementation(() => {});
    const ports = await listenPorts(localStack(LOCAL_STACK_BASE_PORT));
    const kernel = ephemeralPortRange();
    // Every process: gRPC, admin, health and metrics listeners, the gateway and the dashboard.
    expect(ports.length).toBeGreaterThanOrEqual(30);
    expect(ports).toContain(LOCAL_STACK_BASE_PORT);
    for (const port of ports) {
      expect(port).toBeGreaterThanOrEqual(1024);
      expect(port < kernel.from || port > kernel.to).toBe(true);
      expect(port < FREE_PORT_RANGE.from || port >= FREE_PORT_RANGE.to).toBe(true);
    }
    expect(warn).not.toHaveBeenCalled();
  });

  it('are warned about when a chosen base port puts them in the ephemeral range', async () => {
    const warn = vi.spyOn(process, 'emitWarning').mockImplementation(() => {});
    const kernel = ephemeralPortRange();
    await listenPorts(localStack(kernel.from + 1000));
    expect(warn).toHaveBeenCalledTimes(1);
    expect(String(warn.mock.calls[0]?.[0])).toMatch(/ephemeral range .*EADDRINUSE/);
  });
});
