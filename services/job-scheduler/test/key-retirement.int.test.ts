import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type JobsHarness, startJobsHarness, status } from './support/harness.js';

// A purge is a DELETE: the sealed blobs stay in base backups, WAL archives and dead tuples. What makes
// them unreadable there is the end of the key-encryption key that wrapped their data keys. These tests
// rotate keys across real scheduler and worker restarts and check what the operator is told: which key
// still wraps blobs, until when, when one can be retired, and when one was retired too early.

const k = (id: string, fill: number) => `${id}:${Buffer.alloc(32, fill).toString('base64')}`;
const K1 = k('k1', 1);
const K2 = k('k2', 2);
const DAY = 86_400_000;

async function metric(h: JobsHarness, name: string): Promise<number> {
  const port = h.stack.addresses.metrics['job-scheduler'];
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name} `) || l.startsWith(`${name}{`));
  return Number(line?.split(' ').at(-1) ?? Number.NaN);
}

/** Restart the scheduler and its worker with these keys, as a rollout of a changed Secret does. */
async function rollKeys(h: JobsHarness, keks: string, active: string): Promise<void> {
  for (const name of ['job-worker', 'job-scheduler'] as const) {
    Object.assign(h.stack.processes.get(name)!.env, { DNC_KEKS: keks, DNC_KEK_ACTIVE_ID: active });
    await h.stack.stop(name);
  }
  await h.stack.start('job-scheduler');
  await h.stack.start('job-worker');
}

async function keys(h: JobsHarness) {
  const r = await h.admin.getKeyStatus({});
  return Object.fromEntries(
    r.keys.map((x) => [
      x.kekId,
      {
        active: x.active,
        configured: x.configured,
        blobs: Number(x.blobs),
        retirable: x.retirable,
        retainedUntil: x.retainedUntil ? Number(x.retainedUntil.seconds) * 1000 : undefined,
      },
    ]),
  );
}

describe('key-encryption keys: rotation, retirement and a key retired too early', () => {
  let h: JobsHarness;

  beforeAll(async () => {
    h = await startJobsHarness({
      registry: ['+525581234567'],
      env: { DNC_KEKS: K1, DNC_KEK_ACTIVE_ID: 'k1', DNC_SWEEP_INTERVAL_MS: '200' },
    });
  }, 120_000);

  afterAll(async () => {
    await h?.close();
  });

  it('a key wraps its jobs until their last purge, is retirable only then, and a missing one is told', async () => {
    const phones = ['+52 55 8123 4567', '+52 33 9876 5432'];
    const a = await h.submit(phones);
    await h.waitFor(a.jobId, (j) => j.status === status.SUCCEEDED);
    const expected = await h.result(a.jobId);

    // The input went at terminalization; the result stays for its 7 days, under k1.
    const first = await keys(h);
    expect(first).toEqual({
      k1: { active: true, configured: true, blobs: 1, retirable: false, retainedUntil: expect.any(Number) },
    });
    // Until the result's purge: its 7 days and the purge delay of a download in progress (2 x 15 min).
    const PURGE_DELAY = 2 * 15 * 60_000;
    expect(first['k1']!.retainedUntil! - Date.now()).toBeGreaterThan(7 * DAY + PURGE_DELAY - 60_000);
    expect(first['k1']!.retainedUntil! - Date.now()).toBeLessThan(7 * DAY + PURGE_DELAY + 60_000);

    // Rotation: k2 active, k1 kept for what it wraps. New work is under k2; k1 is not retirable yet.
    await rollKeys(h, `${K1},${K2}`, 'k2');
    const b = await h.submit(phones);
    await h.waitFor(b.jobId, (j) => j.status === status.SUCCEEDED);
    const rotated = await keys(h);
    expect(rotated['k1']).toMatchObject({ active: false, configured: true, blobs: 1, retirable: false });
    expect(rotated['k2']).toMatchObject({ active: true, configured: true, blobs: 1, retirable: false });
    expect(await h.result(a.jobId)).toEqual(expected);

    // k1 taken out too early: its blob cannot be opened, and the operator is told (gauge, status, log).
    await rollKeys(h, K2, 'k2');
    expect((await keys(h))['k1']).toMatchObject({ configured: false, blobs: 1, retirable: false });
    await expect.poll(() => metric(h, 'dnc_job_blobs_without_key'), { timeout: 10_000 }).toBe(1);
    await expect(h.result(a.jobId)).rejects.toThrow();
    expect(await h.result(b.jobId)).toEqual(expected);
    expect(h.stack.logsOf('job-scheduler')).toMatch(/key-encryption keys not in DNC_KEKS/);

    // Put back, then A's result reaches its purge: k1 wraps nothing and becomes retirable.
    await rollKeys(h, `${K1},${K2}`, 'k2');
    expect((await keys(h))['k1']).toMatchObject({ configured: true, blobs: 1, retirable: false });
    expect(await h.result(a.jobId)).toEqual(expected);
    await h.db.query(`UPDATE jobs.cleanup_tasks SET due_at = now() WHERE job_id = $1 AND target = 'result'`, [
      a.jobId,
    ]);
    await expect
      .poll(async () => (await keys(h))['k1'], { timeout: 10_000 })
      .toEqual({ active: false, configured: true, blobs: 0, retirable: true, retainedUntil: undefined });

    // Retired: the remaining work is untouched, and nothing is reported missing.
    await rollKeys(h, K2, 'k2');
    expect(await keys(h)).toEqual({
      k2: { active: true, configured: true, blobs: 1, retirable: false, retainedUntil: expect.any(Number) },
    });
    expect(await h.result(b.jobId)).toEqual(expected);
  }, 180_000);
});
