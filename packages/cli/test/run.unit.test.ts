import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runCli } from '../src/index.js';

const JOB_ID = '2c0f4a52-6a3e-4bb4-8f0d-2a9e5f6a1b7c';
const result = (n: number) => ({
  prohibited_numbers_to_call: [],
  safe_numbers_to_call: [],
  invalid_numbers: [],
  summary: { total_checked: n, prohibited_numbers: 0, safe_numbers: 0, invalid_numbers: 0 },
});
const job = (status: string) => ({
  job_id: JOB_ID,
  status,
  country: 'co',
  submitted_count: 10_001,
  created_at: '2026-11-21T10:00:00.000Z',
  status_url: `http://x/v2/scrub/${JOB_ID}`,
  result_url: `http://x/v2/scrub/${JOB_ID}/result`,
  cancel_url: `http://x/v2/scrub/${JOB_ID}/cancel`,
  expires_at: '2026-11-22T10:00:00.000Z',
});

type Answer = { status: number; body: unknown };
let server: Server;
let baseUrl = '';
let dir = '';
const calls: { method: string; url: string; count?: number }[] = [];
let answer: (method: string, url: string) => Answer;

beforeEach(async () => {
  calls.length = 0;
  dir = await mkdtemp(join(tmpdir(), 'dnc-cli-run-'));
  server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk) => {
      body += chunk;
    });
    req.on('end', () => {
      const count = body ? (JSON.parse(body) as { phones: string[] }).phones.length : undefined;
      calls.push({ method: req.method ?? '', url: req.url ?? '', ...(count === undefined ? {} : { count }) });
      const { status, body: out } = answer(req.method ?? '', req.url ?? '');
      res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(out));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterEach(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
  await rm(dir, { recursive: true, force: true });
});

function io(isTTY = false) {
  const out: string[] = [];
  const err: string[] = [];
  return {
    out,
    err,
    env: {
      stdout: { write: (t: string) => out.push(t) },
      stderr: { write: (t: string) => err.push(t), isTTY },
      env: { DNC_API_KEY: 'k', DNC_BASE_URL: baseUrl },
    },
  };
}

async function numbersFile(n: number): Promise<string> {
  const file = join(dir, `n${n}.txt`);
  await writeFile(file, `${Array.from({ length: n }, (_, i) => String(3_000_000_000 + i)).join('\n')}\n`);
  return file;
}

describe('dnc scrub chooses the interface by size', () => {
  it('10,000 numbers go to v1 and the result goes to stdout; no progress when stderr is not a TTY', async () => {
    answer = () => ({ status: 200, body: result(10_000) });
    const t = io(false);
    expect(await runCli(['scrub', '--country', 'co', await numbersFile(10_000)], t.env)).toBe(0);
    expect(calls).toEqual([{ method: 'POST', url: '/v1/scrub', count: 10_000 }]);
    expect(JSON.parse(t.out.join(''))).toEqual(result(10_000));
    expect(t.err).toEqual([]);
  });

  it('10,001 numbers run as a v2 job and the result goes to --out', async () => {
    let polls = 0;
    answer = (_method, url) => {
      if (url === '/v2/scrub') return { status: 202, body: job('queued') };
      if (url.endsWith('/result')) return { status: 200, body: result(10_001) };
      polls++;
      return { status: 200, body: job(polls < 2 ? 'running' : 'succeeded') };
    };
    const out = join(dir, 'result.json');
    const t = io(true);
    expect(await runCli(['scrub', '--country', 'co', await numbersFile(10_001), '--out', out], t.env)).toBe(
      0,
    );
    expect(calls.map((c) => `${c.method} ${c.url}`)).toEqual([
      'POST /v2/scrub',
      `GET /v2/scrub/${JOB_ID}`,
      `GET /v2/scrub/${JOB_ID}`,
      `GET /v2/scrub/${JOB_ID}/result`,
    ]);
    expect(calls[0]?.count).toBe(10_001);
    expect(JSON.parse(await readFile(out, 'utf8'))).toEqual(result(10_001));
    expect(t.out).toEqual([]);
    expect(t.err.join('')).toContain('\r');
  });
});

describe('dnc errors', () => {
  it('prints the public error code on stderr and exits 1', async () => {
    answer = () => ({
      status: 429,
      body: { error: 'customer_quota_exceeded', message: 'quota of co is exhausted' },
    });
    const t = io();
    expect(await runCli(['scrub', '--country', 'co', await numbersFile(3)], t.env)).toBe(1);
    expect(t.err.join('')).toBe('dnc: error customer_quota_exceeded: quota of co is exhausted\n');
    expect(calls).toHaveLength(1);
  });

  it('reports a failed job with its JobError code', async () => {
    answer = (_method, url) =>
      url === '/v2/scrub'
        ? { status: 202, body: job('queued') }
        : { status: 200, body: { ...job('failed'), error: { error: 'platform_failure' } } };
    const t = io();
    expect(await runCli(['scrub', '--country', 'co', await numbersFile(10_001)], t.env)).toBe(1);
    expect(t.err.join('')).toMatch(/^dnc: error platform_failure: job .* ended failed; no result\n$/);
  });

  it('exits 2 without calling the service for usage, missing key and bad files', async () => {
    answer = () => ({ status: 200, body: result(1) });
    const t = io();
    expect(await runCli(['scrub', 'x.json'], t.env)).toBe(2);
    expect(t.err.join('')).toMatch(/^dnc: error usage: scrub needs --country/);
    const noKey = io();
    noKey.env.env = { DNC_API_KEY: '', DNC_BASE_URL: baseUrl };
    expect(await runCli(['jobs', 'get', JOB_ID], noKey.env)).toBe(2);
    expect(noKey.err.join('')).toBe('dnc: error missing_api_key: set DNC_API_KEY to your API key\n');
    const bad = join(dir, 'bad.json');
    await writeFile(bad, '[5512345678]');
    const t2 = io();
    expect(await runCli(['scrub', '-c', 'mx', bad], t2.env)).toBe(2);
    expect(t2.err.join('')).toMatch(/^dnc: error invalid_input_file: element 0/);
    expect(calls).toHaveLength(0);
  });

  it('jobs get|cancel print the job; jobs result prints the result', async () => {
    answer = (_method, url) =>
      url.endsWith('/result') ? { status: 200, body: result(1) } : { status: 200, body: job('cancelled') };
    for (const action of ['get', 'cancel', 'result']) {
      const t = io();
      expect(await runCli(['jobs', action, JOB_ID], t.env)).toBe(0);
      expect(JSON.parse(t.out.join(''))).toEqual(action === 'result' ? result(1) : job('cancelled'));
    }
    expect(calls.map((c) => `${c.method} ${c.url}`)).toEqual([
      `GET /v2/scrub/${JOB_ID}`,
      `POST /v2/scrub/${JOB_ID}/cancel`,
      `GET /v2/scrub/${JOB_ID}/result`,
    ]);
  });
});
