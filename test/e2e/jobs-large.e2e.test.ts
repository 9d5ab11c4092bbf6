import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { plaintextInPostgres, v2 } from '../../services/job-scheduler/test/support/e2e.js';
import { loadRegistry, type SeededOrg, seedOrg } from '../support/seed.js';
import { startTestStack, type TestStack } from '../support/stack.js';
import { coJobWithResultOf } from '../support/v2-sizes.js';

// Spec, Limits: v2 max inputs 500,000; admission budget 5 s; the complete-result estimate within 25 MiB.
// Issue 6 "Done when": a 500,000-input job is admitted in under 1.5 s and its full result is downloaded
// under 6 s after the POST. Issue 18 item 1: 500,000 numbers written in E.164 (8 MB) are admitted, and
// a job whose real result is exactly 25 MiB is admitted while one byte more is refused.

const LIMIT = 26_214_400;

/**
 * GET `url` as a reader of `bytesPerSecond` (a slow link): the bytes it got, the time it took, and how the
 * response ended (`end`: the whole message; otherwise the error).
 */
function slowRead(url: string, apiKey: string, bytesPerSecond: number) {
  return new Promise<{ status: number; bytes: Buffer; ms: number; ended: string }>((resolve) => {
    const started = Date.now();
    const parts: Buffer[] = [];
    let got = 0;
    let status = 0;
    const done = (ended: string) =>
      resolve({ status, bytes: Buffer.concat(parts), ms: Date.now() - started, ended });
    const req = http.get(url, { headers: { authorization: `Bearer ${apiKey}` } }, (res) => {
      status = res.statusCode ?? 0;
      res.on('data', (piece: Buffer) => {
        parts.push(piece);
        got += piece.length;
        // Ahead of the rate: wait until the link would have carried what was read.
        const ahead = (got / bytesPerSecond) * 1000 - (Date.now() - started);
        if (ahead > 0) {
          res.pause();
          setTimeout(() => res.resume(), ahead);
        }
      });
      res.on('end', () => done(res.complete ? 'end' : 'incomplete'));
      res.on('error', (e) => done(e.message));
      res.on('aborted', () => done('aborted'));
    });
    req.on('error', (e) => done(e.message));
  });
}

/** Colombian mobiles in E.164 (+57 300 / 320), distinct and deterministic. */
function phones(count: number, offset = 0): string[] {
  return Array.from(
    { length: count },
    (_, i) => `+57${i % 2 ? '320' : '300'}${String(10_000_000 + offset + i).slice(-7)}`,
  );
}

describe('a 500,000-input job end to end (issue 6)', () => {
  let stack: TestStack;
  let org: SeededOrg;
  let api: ReturnType<typeof v2>;
  /** The job whose result is exactly 25 MiB (the test that makes it runs first). */
  let largeJobId: string | undefined;

  beforeAll(async () => {
    stack = await startTestStack({ label: 'jobs_large', countries: ['co'] });
    org = await seedOrg(stack, ['co'], { quota: 10_000_000 });
    api = v2(stack, () => org);
    await stack.admin(['org', 'set-rate-limit', '--org', org.orgId, '--limit', '60000']);
    // Every tenth input of the 500,000-input job is registered, written nationally (the job writes E.164);
    // and the registered part of the 25 MiB job.
    await loadRegistry(stack, 'co', [
      ...phones(500_000)
        .filter((_, i) => i % 10 === 0)
        .map((p) => p.slice(3)),
      ...coJobWithResultOf(LIMIT).registered,
    ]);
  });

  afterAll(async () => {
    if (stack) {
      // A sample of the inputs (every 10,007th) must not appear in plaintext anywhere.
      const sample = phones(500_000)
        .filter((_, i) => i % 10_007 === 0)
        .map((p) => p.slice(3));
      expect(await plaintextInPostgres(stack.databaseUrl, sample)).toEqual([]);
      const logs = stack.logs();
      for (const n of sample) expect(logs).not.toContain(n);
    }
    await stack?.teardown();
  });

  it('500,000 E.164 numbers (8 MB): admitted within budget, the complete result delivered', async () => {
    const input = phones(500_000);
    const body = JSON.stringify({ country: 'co', phones: input });
    const t0 = performance.now();
    const res = await fetch(`${stack.baseUrl}/v2/scrub`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${org.apiKey}`,
        'idempotency-key': api.key(),
        'content-type': 'application/json',
      },
      body,
    });
    const admitted = performance.now();
    if (res.status !== 202) console.log(res.status, await res.clone().text(), Math.round(admitted - t0));
    expect(res.status).toBe(202);
    let succeededAt = 0;
    const job = (await res.json()) as { job_id: string; submitted_count: number };
    expect(job.submitted_count).toBe(500_000);
    let status = 'queued';
    while (status !== 'succeeded') {
      await new Promise((r) => setTimeout(r, 50));
      const s = await fetch(`${stack.baseUrl}/v2/scrub/${job.job_id}`, {
        headers: { authorization: `Bearer ${org.apiKey}` },
      });
      if (s.status === 429) continue;
      status = ((await s.json()) as { status: string }).status;
      expect(['queued', 'running', 'succeeded']).toContain(status);
      expect(performance.now() - t0).toBeLessThan(60_000);
    }
    succeededAt = performance.now();
    const r = await fetch(`${stack.baseUrl}/v2/scrub/${job.job_id}/result`, {
      headers: { authorization: `Bearer ${org.apiKey}` },
    });
    expect(r.status).toBe(200);
    const text = await r.text();
    const downloaded = performance.now();
    const result = JSON.parse(text) as {
      prohibited_numbers_to_call: string[];
      safe_numbers_to_call: string[];
      summary: Record<string, number>;
    };
    expect(result.summary).toEqual({
      total_checked: 500_000,
      prohibited_numbers: 50_000,
      safe_numbers: 450_000,
      invalid_numbers: 0,
    });
    expect(result.prohibited_numbers_to_call[1]).toBe(input[10]);
    const timings = {
      admission_ms: Math.round(admitted - t0),
      post_to_succeeded_ms: Math.round(succeededAt - t0),
      post_to_result_ms: Math.round(downloaded - t0),
      body_bytes: body.length,
      result_bytes: text.length,
    };
    console.log(`v2 500k job: ${JSON.stringify(timings)}`);
    expect(timings.admission_ms).toBeLessThan(5_000);
    await expect.poll(async () => (await api.quota(org.orgId, 'co')).reserved, { timeout: 10_000 }).toBe(0);
  });

  it('a job whose real result is exactly 25 MiB is admitted and delivered; one byte more is 413', async () => {
    const post = (phones: string[]) =>
      fetch(`${stack.baseUrl}/v2/scrub`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${org.apiKey}`,
          'idempotency-key': api.key(),
          'content-type': 'application/json',
        },
        body: JSON.stringify({ country: 'co', phones }),
      });
    const before = await api.quota(org.orgId, 'co');
    const past = await post(coJobWithResultOf(LIMIT + 1).phones);
    expect(past.status).toBe(413);
    expect(await past.json()).toEqual({
      error: 'payload_too_large',
      message: expect.stringMatching(/complete result of this job could exceed 26,214,400 bytes/),
    });
    expect(await api.quota(org.orgId, 'co')).toEqual(before);

    const atLimit = coJobWithResultOf(LIMIT);
    const res = await post(atLimit.phones);
    expect(res.status).toBe(202);
    const job = (await res.json()) as { job_id: string };
    const done = await api.waitFor(job.job_id, (s) => s === 'succeeded' || s === 'failed', 60_000);
    expect(done.body.status).toBe('succeeded');
    const r = await fetch(`${stack.baseUrl}/v2/scrub/${job.job_id}/result`, {
      headers: { authorization: `Bearer ${org.apiKey}` },
    });
    expect(r.status).toBe(200);
    // Found by a review (2026-12-03): the result went out without a length, so a body cut short (the
    // scheduler failing mid-stream) looked complete to an HTTP/1.0 or close-delimited reader.
    expect(r.headers.get('content-length')).toBe(String(LIMIT));
    const bytes = Buffer.from(await r.arrayBuffer());
    expect(bytes.length).toBe(LIMIT);
    const result = JSON.parse(bytes.toString('utf8')) as { summary: Record<string, number> };
    expect(result.summary).toEqual({
      total_checked: atLimit.phones.length,
      prohibited_numbers: 100_000,
      safe_numbers: 50_000,
      invalid_numbers: atLimit.phones.length - 150_000,
    });
    largeJobId = job.job_id;
  });

  // Found by a review (2026-12-04): the download was bounded at a minute as a whole (the gateway's fixed
  // deadline, the scheduler's DNC_RESULT_STREAM_MAX_MS, the SDK's attempt), so a reader slower than 3.5 Mbit/s
  // was cut, every time: the result could not be delivered in its 7 days. The bound is 15 minutes now, and a
  // reader that stops reading is closed by the gateway's socket idle timeout.
  it('the 25 MiB result to a reader of 2 Mbit/s: whole, past the minute it was once cut at', async () => {
    expect(largeJobId).toBeDefined();
    const read = await slowRead(`${stack.baseUrl}/v2/scrub/${largeJobId}/result`, org.apiKey, 256 * 1024);
    expect(read.status).toBe(200);
    expect(read.ended).toBe('end');
    expect(read.bytes.length).toBe(LIMIT);
    expect(read.ms).toBeGreaterThan(90_000);
    expect((JSON.parse(read.bytes.toString('utf8')) as { summary: object }).summary).toBeDefined();
  }, 180_000);
});
