import { Code, ConnectError } from '@dnc/kit';
import { admissionv1, registryv1 } from '@dnc/proto';
import { describe, expect, it } from 'vitest';
import { inMemoryUpstream, sleep } from './support/upstream.js';

/**
 * Issue 14 item 5: calls of requests in flight together travel as one internal call (upstream/
 * batching.ts). A request never fails because of another member's deadline: a member already past its
 * own deadline fails alone, a short deadline does not cut the call short for the others, and each
 * member still fails at its own deadline.
 */
const admitReq = (idempotencyKey: string) => ({
  orgId: '00000000-0000-4000-8000-000000000001',
  keyId: '00000000-0000-4000-8000-000000000002',
  country: 'mx',
  idempotencyKey,
  fingerprint: `v1:${'a'.repeat(64)}`,
  inputCount: 1,
  kind: admissionv1.RequestKind.SYNC,
});

async function settle<T>(p: Promise<T>): Promise<'ok' | string> {
  try {
    await p;
    return 'ok';
  } catch (error) {
    return Code[ConnectError.from(error).code] ?? 'error';
  }
}

describe('a batch and its members deadlines (issue 14 item 5)', () => {
  it('Admit: a member already past its deadline fails alone; the others of its batch are admitted', async () => {
    const u = inMemoryUpstream();
    const late = u.upstream.admit(admitReq('late'), 0);
    const onTime = u.upstream.admit(admitReq('on-time'), 5_000);
    expect(await Promise.all([settle(late), settle(onTime)])).toEqual(['DeadlineExceeded', 'ok']);
    expect(u.batches).toEqual(['admitMany 1']);
  });

  it('Admit: a short deadline does not cut the batch short; its own member fails at its deadline', async () => {
    const u = inMemoryUpstream({ admit: () => sleep(400).then(() => ({})) });
    const started = Date.now();
    const short = settle(u.upstream.admit(admitReq('short'), 100)).then((r) => [r, Date.now() - started]);
    const long = settle(u.upstream.admit(admitReq('long'), 10_000));
    const [shortOutcome, shortMs] = await short;
    expect(shortOutcome).toBe('DeadlineExceeded');
    // At its own deadline, not at the batch's answer (loaded machines: generous bound).
    expect(shortMs).toBeLessThan(380);
    expect(await long).toBe('ok');
    expect(u.batches).toEqual(['admitMany 2']);
  });

  // Found by a review (2026-12-03): a single Admit that its caller gives up on is undone by admission (it sees
  // the call's signal); a batched one is not (the batch's call lives on for the others), so the member's
  // reservation and claim were held for nobody until the reconciler (10-20 s): its retries got 409, and a
  // customer near the limit a false 429.
  it('Admit: a member that gave up before its batch answered has its admission aborted; the others keep theirs', async () => {
    const u = inMemoryUpstream({ admit: () => sleep(300).then(() => ({})) });
    const short = settle(u.upstream.admit(admitReq('short'), 100));
    const long = settle(u.upstream.admit(admitReq('long'), 10_000));
    expect(await Promise.all([short, long])).toEqual(['DeadlineExceeded', 'ok']);
    const [shortId, longId] = u.admissionIds;
    await expect.poll(() => u.calls).toContain(`abort ${shortId}`);
    expect(u.calls).not.toContain(`abort ${longId}`);
    // A replay reserved nothing; a v2 admission may be the resume of a claim whose job is stored (admission's
    // reconciler asks the scheduler before undoing it): neither is aborted here.
    const replays = inMemoryUpstream({ admit: () => sleep(300).then(() => ({ replay: true })) });
    expect(await settle(replays.upstream.admit(admitReq('replayed'), 100))).toBe('DeadlineExceeded');
    const job = { ...admitReq('job'), kind: admissionv1.RequestKind.JOB };
    expect(await settle(replays.upstream.admit(job, 100))).toBe('DeadlineExceeded');
    const jobs = inMemoryUpstream({ admit: () => sleep(300).then(() => ({})) });
    expect(await settle(jobs.upstream.admit(job, 100))).toBe('DeadlineExceeded');
    await sleep(400);
    expect([...replays.calls, ...jobs.calls].filter((c) => c.startsWith('abort'))).toEqual([]);
  });

  it('Check and Complete: one member past its deadline does not fail the others', async () => {
    const safe = (n: number) => Array.from({ length: n }, () => registryv1.Outcome.SAFE);
    const u = inMemoryUpstream({ check: (n) => sleep(200).then(() => safe(n)) });
    const checks = await Promise.all([
      settle(u.upstream.check('http://adapter', 'mx', ['5512345678'], 0)),
      settle(u.upstream.check('http://adapter', 'mx', ['5512345679'], 5_000)),
      settle(u.upstream.check('http://adapter', 'mx', ['5512345670'], 50)),
    ]);
    expect(checks).toEqual(['DeadlineExceeded', 'ok', 'DeadlineExceeded']);
    const completes = await Promise.all([
      settle(u.upstream.complete('00000000-0000-4000-8000-000000000003', 0)),
      settle(u.upstream.complete('00000000-0000-4000-8000-000000000004', 5_000)),
    ]);
    expect(completes).toEqual(['DeadlineExceeded', 'ok']);
  });

  // Found by a review (2026-12-03): a batch's CompleteMany carries the latest deadline of its members, so
  // admission could commit a member whose request had already answered an error (charged for a 503).
  it('Complete: each member tells admission its own deadline, not the batch call', async () => {
    const u = inMemoryUpstream({ complete: () => sleep(100) });
    const ids = ['00000000-0000-4000-8000-000000000005', '00000000-0000-4000-8000-000000000006'];
    const sent = Date.now();
    const first = u.upstream.complete(ids[0]!, 10_000);
    // Sent while the first call is on the wire: the second and third travel together.
    await sleep(10);
    const together = [u.upstream.complete(ids[1]!, 300), u.upstream.complete(ids[0]!, 8_000)];
    await Promise.all([first, ...together].map(settle));
    expect(u.batches).toEqual(['completeMany 1', 'completeMany 2']);
    const [alone, short, long] = u.completeTimeouts;
    expect(alone).toBeGreaterThan(9_900);
    expect(short).toBeGreaterThan(0);
    expect(short).toBeLessThanOrEqual(300);
    expect(long).toBeGreaterThan(7_800);
    expect(long).toBeLessThanOrEqual(8_000);
    // And as the moment itself (found 2026-12-05): a relative time counts from the call's arrival, so a
    // completion held on its way would get its time again; the moment does not move (admission takes the
    // earliest; services/admission/test/completion-held-on-its-way.int.test.ts).
    const [aloneAt, shortAt, longAt] = u.completeDeadlines;
    expect(aloneAt! - sent).toBeGreaterThanOrEqual(10_000);
    expect(aloneAt! - sent).toBeLessThan(10_200);
    expect(shortAt! - sent).toBeGreaterThanOrEqual(300);
    expect(shortAt! - sent).toBeLessThan(500);
    expect(longAt! - sent).toBeGreaterThanOrEqual(8_000);
    expect(longAt! - sent).toBeLessThan(8_200);
  });
});
