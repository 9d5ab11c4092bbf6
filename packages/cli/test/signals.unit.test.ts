import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

// Found by a review (2026-12-03): standard input (phone numbers) was copied to a private temporary file, and
// only Ctrl-C (SIGINT) ended a run through the code that removed it. Found by a review (2026-12-05): a run
// killed outright (SIGKILL) can run no code at all, and left the copy. Standard input is now held in
// memory only: nothing is ever written. The built CLI as a process, its TMPDIR a directory of the test's
// own, against a server that never answers.
const CLI = fileURLToPath(new URL('../bin/dnc.js', import.meta.url));

describe('a run ended by a signal leaves no copy of its input behind', () => {
  for (const signal of ['SIGTERM', 'SIGHUP', 'SIGINT', 'SIGKILL'] as const) {
    it(`${signal} while the request is in flight: standard input is on no disk`, async () => {
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
        expect(await readdir(tmp)).toEqual([]); // nothing written while the request waits
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

// Found by a review (2026-12-03): the Idempotency-Key the CLI generates was printed after a lost answer, but
// not after an interruption, and a request interrupted in flight may still be answered (and charged) by the
// service: run again without the key, it was a second request and a second charge.
describe('an interrupted request names the key that gets its answer without a second charge', () => {
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    it(`${signal} while the request is in flight: stderr names the key the request carried`, async () => {
      let key: string | undefined;
      let received!: () => void;
      const requested = new Promise<void>((r) => {
        received = r;
      });
      const server = createServer((req) => {
        key = req.headers['idempotency-key'] as string;
        received();
      });
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
      const dir = await mkdtemp(join(tmpdir(), 'dnc-cli-key-'));
      try {
        const file = join(dir, 'numbers.txt');
        await writeFile(file, '+57 300 123 4567\n');
        const child = spawn(process.execPath, [CLI, 'scrub', '--country', 'co', file], {
          env: {
            ...process.env,
            DNC_API_KEY: 'dnc_test_key',
            DNC_BASE_URL: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
          },
          stdio: ['ignore', 'ignore', 'pipe'],
        });
        let stderr = '';
        child.stderr.on('data', (c: Buffer) => {
          stderr += c.toString('utf8');
        });
        const exited = new Promise<number | null>((r) => child.once('close', (code) => r(code)));
        await requested;
        child.kill(signal);
        expect(await exited).toBe(130);
        expect(key).toMatch(/^[0-9a-f-]{36}$/);
        expect(stderr).toContain(`--idempotency-key ${key}`);
      } finally {
        server.closeAllConnections();
        await new Promise((r) => server.close(r));
        await rm(dir, { recursive: true, force: true });
      }
    });
  }
});

// Found by the same review: Ctrl-C while the numbers were still being read from standard input was not
// heard (the copy waited for the end of input), and a second Ctrl-C killed the process with the copy left.
describe('interrupted while standard input is still being read', () => {
  it('SIGINT stops the reading at once; nothing was written', async () => {
    const tmp = await mkdtemp(join(tmpdir(), 'dnc-cli-stdin-'));
    try {
      const child = spawn(process.execPath, [CLI, 'scrub', '--country', 'co', '-'], {
        env: { ...process.env, TMPDIR: tmp, DNC_API_KEY: 'dnc_test_key', DNC_BASE_URL: 'http://127.0.0.1:9' },
        stdio: ['pipe', 'ignore', 'ignore'],
      });
      const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
      // More than a pipe holds, and never ended: drained only once the CLI reads standard input, after
      // its signal handlers are in place.
      const lines = '+57 300 123 4567\n'.repeat(64 * 1024);
      if (!child.stdin.write(lines)) await once(child.stdin, 'drain');
      expect(await readdir(tmp)).toEqual([]);
      child.kill('SIGINT');
      const code = await Promise.race([
        exited,
        new Promise<string>((r) => setTimeout(() => r('still running'), 5_000)),
      ]);
      child.kill('SIGKILL');
      expect(code).toBe(130);
      expect(await readdir(tmp)).toEqual([]);
    } finally {
      await rm(tmp, { recursive: true, force: true });
    }
  });
});
