import { randomUUID } from 'node:crypto';
import type { Client } from '@connectrpc/connect';
import { checkInvariants, formatViolations } from '@dnc/devstack';
import type { Logger } from '@dnc/kit';
import type { jobsv1 } from '@dnc/proto';
import { describe, expect, it } from 'vitest';
import { ClaimReconciler } from '../src/reconciler.js';
import type { Reservations } from '../src/reservations.js';
import type { ClaimStore } from '../src/store/index.js';
import { admitReq, startedHarness } from './harness.js';

const h = startedHarness();

// Found by a review (2026-12-05): the reconciler read the hundred oldest claims in progress, whatever their
// kind. v2 claims it cannot resolve while the job scheduler is down (no FenceJob) stay the oldest, and with
// a hundred of them every v1 claim behind them kept its reservation until the scheduler came back.
describe('the claim reconciler while the job scheduler is down (this harness runs none)', () => {
  it('a hundred stale v2 claims ahead of a v1 claim: the v1 one is still resolved', async () => {
    const { admission } = h.clients();
    const c = await h.customer(['mx']);
    const first = await admission.admit(admitReq(c, { inputCount: 3 }));
    expect(await h.account(c.orgId, 'mx')).toMatchObject({ reserved: 3 });
    const jobs = Array.from({ length: 101 }, () => randomUUID());
    await h.sql(
      `INSERT INTO admission.idempotency_records
         (key_id, key_hash, fingerprint, kind, state, admission_id, job_id, claimed_at)
       SELECT $1, decode(md5(a::text), 'hex'), 'v1:stale', 2, 'in_progress', a, a, now() - interval '1 hour'
       FROM unnest($2::uuid[]) AS a`,
      [randomUUID(), jobs],
    );
    try {
      await h.sql(
        "UPDATE admission.idempotency_records SET claimed_at = now() - interval '1 minute' WHERE admission_id = $1",
        [first.admissionId],
      );
      const done = await h.instances[0]!.reconciler.reconcileOnce();
      expect(done).toMatchObject({ dropped: 1, givenUp: 0, confirmed: 0 });
      expect(await h.account(c.orgId, 'mx')).toMatchObject({ reserved: 0, used: 0 });
    } finally {
      await h.sql('DELETE FROM admission.idempotency_records WHERE admission_id = ANY($1::uuid[])', [jobs]);
    }
    const violations = await checkInvariants({ databaseUrl: h.databaseUrl }, { settleMs: 5_000 });
    expect(violations, formatViolations(violations)).toEqual([]);
  });
});

describe('a pass after a failure', () => {
  it('tries the other claims of a kind next pass, not each with its own timeout now; other kinds go on', async () => {
    const claim = (kind: 'job' | 'sync') => ({
      admissionId: randomUUID(),
      kind,
      jobId: kind === 'job' ? randomUUID() : null,
    });
    const stale = [claim('job'), claim('job'), claim('sync'), claim('job'), claim('sync')];
    let fences = 0;
    const dropped: string[] = [];
    const reconciler = new ClaimReconciler(
      {
        claims: {
          staleClaims: async () => stale,
          dropClaim: async (id: string) => void dropped.push(id),
        } as unknown as ClaimStore,
        reservations: { release: async () => ({ committed: false }) } as unknown as Reservations,
        jobs: {
          fenceJob: async () => {
            fences++;
            throw new Error('scheduler unreachable');
          },
        } as unknown as Client<typeof jobsv1.JobsService>,
        logger: { warn() {} } as unknown as Logger,
        timeouts: { jobClaimMs: 60_000, syncClaimMs: 16_000 } as never,
      },
      60_000,
    );
    const done = await reconciler.reconcileOnce();
    expect(fences).toBe(1);
    expect(done).toMatchObject({ dropped: 2, givenUp: 0 });
    expect(dropped).toEqual([stale[2]!.admissionId, stale[4]!.admissionId]);
  });

  it('a claim that fails on its own sits out the next passes: the claims behind it are resolved', async () => {
    const bad = { admissionId: randomUUID(), kind: 'job' as const, jobId: randomUUID() };
    const good = { admissionId: randomUUID(), kind: 'job' as const, jobId: randomUUID() };
    const open = new Set<string>([bad.admissionId, good.admissionId]);
    const reconciler = new ClaimReconciler(
      {
        claims: {
          staleClaims: async (_j: number, _s: number, _l: number, excluded: readonly string[]) =>
            [bad, good].filter((c) => open.has(c.admissionId) && !excluded.includes(c.admissionId)),
          dropClaim: async (id: string) => void open.delete(id),
        } as unknown as ClaimStore,
        reservations: { release: async () => ({ committed: false }) } as unknown as Reservations,
        jobs: {
          fenceJob: async ({ jobId }: { jobId: string }) => {
            if (jobId === bad.jobId) throw new Error('its job lock is held');
            return { fenced: true };
          },
        } as unknown as Client<typeof jobsv1.JobsService>,
        logger: { warn() {} } as unknown as Logger,
        timeouts: { jobClaimMs: 60_000, syncClaimMs: 16_000 } as never,
      },
      60_000,
    );
    expect(await reconciler.reconcileOnce()).toMatchObject({ givenUp: 0 });
    expect(await reconciler.reconcileOnce()).toMatchObject({ givenUp: 1 });
    expect([...open]).toEqual([bad.admissionId]);
  });
});
