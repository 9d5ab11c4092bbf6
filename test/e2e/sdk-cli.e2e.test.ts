import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { DncClient } from '@dnc-scrub/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call } from '../support/http.js';
import { accountUsage, loadRegistry, type SeededOrg, seedOrg } from '../support/seed.js';
import { ROOT, startTestStack, type TestStack } from '../support/stack.js';

// Issue 8, "Done when": the SDK through a rate-limited burst and a 503 drill with one charge, and
// `dnc scrub` on a 20,000-number file as a job with a progress indicator and the complete result.
describe('SDK and dnc CLI against the real stack (issue 8)', () => {
  let stack: TestStack;
  let org: SeededOrg;

  beforeAll(async () => {
    stack = await startTestStack({
      label: 'sdkcli',
      countries: ['co'],
      // A short technical window so a rate-limited retry waits seconds, not a minute.
      processEnv: { admission: { DNC_RATE_WINDOW_SECONDS: '2' } },
    });
    org = await seedOrg(stack, ['co']);
    await loadRegistry(stack, 'co', ['+57 300 123 4567', '(601) 234 5678']);
  });
  afterAll(async () => {
    await stack?.teardown();
  });

  const usage = () => accountUsage(stack, org.orgId, 'co');

  it('scrub() rides out a 429 and a 503 with the same idempotency key and is charged once', async () => {
    const before = await usage();
    await stack.admin(['org', 'set-rate-limit', '--org', org.orgId, '--limit', '1']);
    await stack.admin(['adapter', 'drill', '--country', 'co', '--fail', 'unavailable']);
    // Use up a window with one other authenticated request, sent right after a window starts, so
    // the SDK's first call certainly lands in that same window (429). One request per window only:
    // more would trip the abuse guard (an organization far past its limit is blocked).
    const probe = await call(stack.baseUrl, 'GET', '/v2/scrub/00000000-0000-4000-8000-000000000000', {
      apiKey: org.apiKey,
    });
    const nextWindow = Number(probe.headers.get('x-ratelimit-reset')) * 1000;
    await new Promise((r) => setTimeout(r, Math.max(0, nextWindow - Date.now()) + 50));
    const burn = await call(stack.baseUrl, 'GET', '/v2/scrub/00000000-0000-4000-8000-000000000000', {
      apiKey: org.apiKey,
    });
    expect(burn.headers.get('x-ratelimit-remaining')).toBe('0');
    const seen: { status: number; key: string | null }[] = [];
    const client = new DncClient({
      apiKey: org.apiKey,
      baseUrl: stack.baseUrl,
      maxRetries: 12,
      retryBaseDelayMs: 200,
      retryMaxDelayMs: 2_000,
      fetch: async (input, init) => {
        const res = await fetch(input, init);
        if (String(input).endsWith('/v1/scrub')) {
          seen.push({ status: res.status, key: new Headers(init?.headers).get('idempotency-key') });
        }
        return res;
      },
    });
    const clear = new Promise((resolve) => setTimeout(resolve, 3_500)).then(() =>
      stack.admin(['adapter', 'drill', '--country', 'co', '--clear']),
    );
    try {
      const result = await client.scrub({ country: 'co', phones: ['+57 300 123 4567', '3109999999'] });
      expect(result.prohibited_numbers_to_call).toEqual(['+57 300 123 4567']);
      expect(result.safe_numbers_to_call).toEqual(['3109999999']);
    } finally {
      await clear;
      await stack.admin(['org', 'set-rate-limit', '--org', org.orgId, '--limit', '60000']);
    }
    const statuses = seen.map((s) => s.status);
    expect(statuses).toContain(429);
    expect(statuses).toContain(503);
    expect(statuses.at(-1)).toBe(200);
    // One logical request: one key on every attempt, one charge, one usage record.
    expect(new Set(seen.map((s) => s.key)).size).toBe(1);
    const after = await usage();
    expect(after.used - before.used).toBe(2);
    expect(after.records - before.records).toBe(1);
    expect(after.reserved).toBe(0);
  });

  it('dnc scrub on a 20,000-number file runs a job, shows progress on a terminal, writes the complete result', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'dnc-cli-'));
    const input = path.join(dir, 'numbers.txt');
    const output = path.join(dir, 'result.json');
    const phones = Array.from({ length: 20_000 }, (_, i) =>
      i % 4 === 0
        ? '+57 300 123 4567'
        : i % 4 === 1
          ? `31${String(i).padStart(8, '0')}`
          : i % 4 === 2
            ? '601 234 5678'
            : 'n/a',
    );
    writeFileSync(input, `${phones.join('\n')}\n`);
    const cli = path.join(ROOT, 'packages/cli/bin/dnc.js');
    // `script` gives the CLI a pseudo-terminal, as a person at a terminal would have.
    const { code, out } = await new Promise<{ code: number | null; out: string }>((resolve) => {
      const child = spawn(
        'script',
        ['-qec', `node ${cli} scrub --country co ${input} --out ${output}`, '/dev/null'],
        {
          env: { ...process.env, DNC_API_KEY: org.apiKey, DNC_BASE_URL: stack.baseUrl },
          stdio: ['ignore', 'pipe', 'pipe'],
        },
      );
      let text = '';
      child.stdout.on('data', (c) => {
        text += c;
      });
      child.stderr.on('data', (c) => {
        text += c;
      });
      child.once('exit', (c) => resolve({ code: c, out: text }));
    });
    expect(code, out.slice(-500)).toBe(0);
    expect(out).toMatch(/[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏] (submitting|job )/);
    expect(out).not.toContain(org.apiKey);
    const result = JSON.parse(readFileSync(output, 'utf8'));
    expect(result.summary).toEqual({
      total_checked: 20_000,
      prohibited_numbers: 10_000,
      safe_numbers: 5_000,
      invalid_numbers: 5_000,
    });
    expect(result.prohibited_numbers_to_call[0]).toBe('+57 300 123 4567');
    expect(result.safe_numbers_to_call[0]).toBe('3100000001');
    expect(result.invalid_numbers[0]).toEqual({ input: 'n/a', reason: 'unparseable' });

    // Piped (no terminal): no progress indicator at all, the same result on stdout.
    const piped = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
      const child = spawn(process.execPath, [cli, 'scrub', '--country', 'co', input], {
        env: { ...process.env, DNC_API_KEY: org.apiKey, DNC_BASE_URL: stack.baseUrl },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (c) => {
        stdout += c;
      });
      child.stderr.on('data', (c) => {
        stderr += c;
      });
      child.once('exit', (c) => resolve({ code: c, stdout, stderr }));
    });
    expect(piped.code).toBe(0);
    expect(piped.stderr).not.toMatch(/[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏]/);
    expect(JSON.parse(piped.stdout).summary.total_checked).toBe(20_000);
  });
});
