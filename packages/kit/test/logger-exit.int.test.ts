import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

// A service whose parent died (the reader of its standard output: `npm start` killed, a test or the
// chaos runner gone) never exited: SIGTERM drained it, it logged "stopped" and called
// process.exit, and pino's exit flush retried its write every 100 ms for ever (EPIPE), the event
// loop blocked, a second signal unheard. A real process with the built kit's logger: the reading end
// of its stdout is closed, it logs two lines (the first still being written when it exits) and exits.

const KIT = path.resolve(fileURLToPath(new URL('..', import.meta.url)), 'dist/index.js');

function run(stdoutRead: 'read' | 'closed'): Promise<{ code: number | null; out: string; ms: number }> {
  const script = `
    import { createLogger } from ${JSON.stringify(KIT)};
    const logger = createLogger('probe', 'info');
    setTimeout(() => {
      logger.info('draining');
      logger.info('stopped');
      process.exit(0);
    }, 300);
  `;
  const t0 = performance.now();
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  if (stdoutRead === 'closed') child.stdout.destroy();
  else child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  return new Promise((resolve) => {
    const kill = setTimeout(() => child.kill('SIGKILL'), 5_000);
    child.on('exit', (code) => {
      clearTimeout(kill);
      resolve({ code, out, ms: performance.now() - t0 });
    });
  });
}

describe("a service's logs when it exits", () => {
  it('nobody reads its standard output any more: it exits at once all the same', async () => {
    const r = await run('closed');
    expect(r.code).toBe(0);
    expect(r.ms).toBeLessThan(4_000);
  });

  it('its standard output is read: every line is written before it exits', async () => {
    const r = await run('read');
    expect(r.code).toBe(0);
    const lines = r.out
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { msg: string; service: string });
    // The exit flush writes what waited behind the line still in flight, which may land after it
    // (pino's asynchronous destination): both lines, in either order.
    expect(lines.map((l) => l.msg).sort()).toEqual(['draining', 'stopped']);
    expect(lines.every((l) => l.service === 'probe')).toBe(true);
  });
});
