import { spawn } from 'node:child_process';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

// Found by a review (2026-12-03): standard input (phone numbers) is copied to a private temporary file so a
// table can be read twice; only Ctrl-C (SIGINT) ended a run through the code that removes it. A `kill`
// (SIGTERM) or a closed terminal (SIGHUP) while waiting for an answer left the numbers on disk. The built
// CLI as a process, its TMPDIR a directory of the test's own, against a server that never answers.
const CLI = fileURLToPath(new URL('../bin/dnc.js', import.meta.url));

describe('a run ended by a signal leaves no copy of its input behind', () => {
  for (const signal of ['SIGTERM', 'SIGHUP', 'SIGINT'] as const) {
    it(`${signal} while the request is in flight: the spooled stdin is removed`, async () => {
      const tmp = await mkdtemp(join(tmpdir(), 'dnc-cli-signal-'));
      let received!: () => void;
      const requested = new Promise<void>((r) => {
        received = r;
      });
      // Answers nothing: the CLI waits on its request until the signal.
      const server = createServer(() => received());
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
      try {
        const child = spawn(process.execPath, [CLI, 'scrub', '--country', 'co', '-'], {
          env: {
            ...process.env,
            TMPDIR: tmp,
            DNC_API_KEY: 'dnc_test_key',
            DNC_BASE_URL: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
          },
          stdio: ['pipe', 'ignore', 'pipe'],
        });
        child.stdin.end('+57 300 123 4567\n+57 300 123 4568\n');
        const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
        await requested;
        expect(await readdir(tmp)).toHaveLength(1); // the spool is there while the request waits
        child.kill(signal);
        const code = await exited;
        expect(code).not.toBe(0);
        expect(await readdir(tmp)).toEqual([]);
      } finally {
        server.closeAllConnections();
        await new Promise((r) => server.close(r));
        await rm(tmp, { recursive: true, force: true });
      }
    });
  }
});
