import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

// Found by a review (2026-12-05): `--api-key-file -` with the numbers named as /dev/stdin read standard input
// twice: the key reader took the stream, and the numbers' reader what was left, or the other way round, so the
// key line could be sent as a number. Both from one stream is a usage error (exit 2), nothing sent. The built
// CLI as a process, its standard input a pipe.
const CLI = fileURLToPath(new URL('../bin/dnc.js', import.meta.url));

async function run(args: string[]): Promise<{ code: number | null; stderr: string; requests: number }> {
  let requests = 0;
  const server = createServer((_, res) => {
    requests += 1;
    res.writeHead(500).end();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  try {
    const child = spawn(process.execPath, [CLI, ...args], {
      env: {
        ...process.env,
        DNC_API_KEY: '',
        DNC_BASE_URL: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      },
      stdio: ['pipe', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (d) => {
      stderr += String(d);
    });
    child.stdin.end('dnc_test_key\n+57 300 123 4567\n');
    const code = await new Promise<number | null>((r) => child.once('exit', (c) => r(c)));
    return { code, stderr, requests };
  } finally {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  }
}

describe('the numbers and the API key from one stream', () => {
  for (const args of [
    ['scrub', '--country', 'co', '--api-key-file', '-', '/dev/stdin'],
    ['scrub', '--country', 'co', '--api-key-file', '/dev/stdin', '-'],
    ['scrub', '--country', 'co', '--api-key-file', '/proc/self/fd/0', '/dev/stdin'],
    ['scrub', '--country', 'co', '--api-key-file', '-', '-'],
  ]) {
    it(`${args.slice(3).join(' ')}: a usage error, nothing sent`, async () => {
      const { code, stderr, requests } = await run(args);
      expect(code).toBe(2);
      expect(stderr).toContain('the numbers and the API key cannot both come from standard input');
      expect(stderr).not.toContain('dnc_test_key');
      expect(requests).toBe(0);
    });
  }

  it('the key on standard input and the numbers in a file: sent (the control)', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'dnc-cli-stdin-'));
    try {
      await writeFile(join(dir, 'numbers.txt'), '+57 300 123 4567\n');
      const { stderr, requests } = await run([
        'scrub',
        '--country',
        'co',
        '--api-key-file',
        '-',
        join(dir, 'numbers.txt'),
      ]);
      expect(stderr).not.toContain('cannot both come from standard input');
      expect(requests).toBeGreaterThan(0);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
