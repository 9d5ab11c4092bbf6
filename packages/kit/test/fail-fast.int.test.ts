import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

// Issue 14 item 7: a rejection nobody handles ends a service at once, by design, with one line that
// names the error's kind and nothing of its message or stack (they may carry a phone number or a
// key). A real process runs runMain from the built kit and leaves a promise rejected.

const KIT = path.resolve(fileURLToPath(new URL('..', import.meta.url)), 'dist/index.js');

function run(body: string): Promise<{ code: number | null; stderr: string; ms: number }> {
  const script = `
    import { runMain } from ${JSON.stringify(KIT)};
    void runMain('probe', async () => {
      setInterval(() => {}, 1000); // a service keeps its event loop busy
      ${body}
    });
  `;
  const t0 = performance.now();
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => {
    stderr += d.toString();
  });
  return new Promise((resolve) => {
    const kill = setTimeout(() => child.kill('SIGKILL'), 10_000);
    child.on('exit', (code) => {
      clearTimeout(kill);
      resolve({ code, stderr, ms: performance.now() - t0 });
    });
  });
}

describe('a service process with an unhandled rejection', () => {
  it('exits 1 at once with one line: no message, no stack', async () => {
    const r = await run(`
      setTimeout(() => {
        const e = new Error('secret +525512345678');
        e.code = 'ECONNRESET';
        void Promise.reject(e);
      }, 200);
    `);
    expect(r.code).toBe(1);
    expect(r.ms).toBeLessThan(8_000);
    expect(r.stderr).toBe('probe: unhandled rejection: Error (ECONNRESET); exiting\n');
  });

  it('an uncaught exception in a callback: the same', async () => {
    const r = await run(`setTimeout(() => { throw new TypeError('secret +525512345678'); }, 200);`);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe('probe: uncaught exception: TypeError; exiting\n');
  });
});
