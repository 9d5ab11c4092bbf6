import { JOB_STATUSES } from '@dnc/api-contract/limits';
import { describe, expect, it } from 'vitest';
import {
  carriesError,
  decideCancel,
  expiresAt,
  quotaSettlementFor,
  resultAvailability,
  retryHintLeft,
} from '../src/domain/states.js';

const policy = {
  hardCapSeconds: 86_400,
  resultTtlSeconds: 604_800,
  metadataTtlSeconds: 2_592_000,
  resultStreamMaxMs: 60_000,
};
const created = new Date('2026-01-01T00:00:00Z');
const terminal = new Date('2026-01-01T01:00:00Z');
/** The hard cap stored with a job at admission (`hard_cap_at`): admission plus 24 hours. */
const hardCapAt = new Date('2026-01-02T00:00:00Z');

describe('States table', () => {
  it('cancel: queued at once; running without a call at once; running with a call after it; terminal unchanged', () => {
    expect(decideCancel('queued', 0)).toEqual({ kind: 'cancel_now' });
    expect(decideCancel('running', 0)).toEqual({ kind: 'cancel_now' });
    expect(decideCancel('running', 2)).toEqual({ kind: 'cancel_after_call' });
    expect(decideCancel('succeeded', 0)).toEqual({ kind: 'keep_terminal', state: 'succeeded' });
    expect(decideCancel('expired', 3)).toEqual({ kind: 'keep_terminal', state: 'expired' });
  });

  it('quota is committed only on success and released on every other terminal state', () => {
    expect(quotaSettlementFor('succeeded')).toBe('commit');
    for (const s of ['failed', 'cancelled', 'expired'] as const)
      expect(quotaSettlementFor(s)).toBe('release');
  });

  it('JobError only for failed and expired; cancelled never carries one', () => {
    expect(JOB_STATUSES.filter(carriesError)).toEqual(['failed', 'expired']);
  });
});

describe('expires_at by state', () => {
  it('queued or running: admission plus the hard cap', () => {
    for (const status of ['queued', 'running'] as const)
      expect(
        expiresAt({ status, createdAt: created, terminalAt: null, hardCapAt }, policy).toISOString(),
      ).toBe('2026-01-02T00:00:00.000Z');
  });
  it('queued or running: the hard cap the job was admitted with, not the one configured now', () => {
    // Admitted under a 1-hour cap (the sweeper expires it on `hard_cap_at`); the cap is 24 hours today.
    const oneHour = new Date(created.getTime() + 3_600_000);
    expect(
      expiresAt({ status: 'running', createdAt: created, terminalAt: null, hardCapAt: oneHour }, policy),
    ).toEqual(oneHour);
  });
  it('succeeded: terminalization plus 7 days', () => {
    expect(
      expiresAt(
        { status: 'succeeded', createdAt: created, terminalAt: terminal, hardCapAt },
        policy,
      ).toISOString(),
    ).toBe('2026-01-08T01:00:00.000Z');
  });
  it('failed, cancelled, expired: terminalization plus 30 days', () => {
    for (const status of ['failed', 'cancelled', 'expired'] as const)
      expect(
        expiresAt({ status, createdAt: created, terminalAt: terminal, hardCapAt }, policy).toISOString(),
      ).toBe('2026-01-31T01:00:00.000Z');
  });
  it('follows configured periods', () => {
    const short = { hardCapSeconds: 5, resultTtlSeconds: 7, metadataTtlSeconds: 9, resultStreamMaxMs: 1_000 };
    expect(
      expiresAt(
        { status: 'succeeded', createdAt: created, terminalAt: terminal, hardCapAt },
        short,
      ).getTime(),
    ).toBe(terminal.getTime() + 7_000);
    expect(
      expiresAt({ status: 'failed', createdAt: created, terminalAt: terminal, hardCapAt }, short).getTime(),
    ).toBe(terminal.getTime() + 9_000);
  });
});

describe('JobError retry hint (retry_after_seconds)', () => {
  const failed = { errorRetryAfter: 180, terminalAt: terminal };
  const later = (ms: number) => new Date(terminal.getTime() + ms);
  it('counts down from the failure: a status read later does not repeat a wait that has passed', () => {
    expect(retryHintLeft(failed, terminal)).toBe(180);
    expect(retryHintLeft(failed, later(13_000))).toBe(167);
    expect(retryHintLeft(failed, later(179_001))).toBe(1);
  });
  it('no hint once the wait has passed, or when there was none', () => {
    expect(retryHintLeft(failed, later(180_000))).toBe(0);
    expect(retryHintLeft(failed, later(30 * 86_400_000))).toBe(0);
    expect(retryHintLeft({ errorRetryAfter: null, terminalAt: terminal }, terminal)).toBe(0);
  });
  it('never more than the wait stored at the failure (a process clock behind the database)', () => {
    expect(retryHintLeft(failed, new Date(terminal.getTime() - 5_000))).toBe(180);
  });
});

describe('result availability', () => {
  const at = (status: (typeof JOB_STATUSES)[number], purged = false) =>
    resultAvailability(
      { status, terminalAt: terminal, resultPurged: purged },
      policy,
      new Date(terminal.getTime() + 1000),
    );
  it('409 not ready while queued or running (with Retry-After), failed or cancelled (without)', () => {
    expect(at('queued')).toEqual({ kind: 'not_ready', retryAfterSeconds: 2 });
    expect(at('running')).toEqual({ kind: 'not_ready', retryAfterSeconds: 2 });
    expect(at('failed')).toEqual({ kind: 'not_ready' });
    expect(at('cancelled')).toEqual({ kind: 'not_ready' });
  });
  it('410 job_expired for an expired job; 410 job_result_expired after the result TTL or a purge', () => {
    expect(at('expired')).toEqual({ kind: 'job_expired' });
    expect(at('succeeded')).toEqual({ kind: 'ready' });
    expect(at('succeeded', true)).toEqual({ kind: 'result_expired' });
    expect(
      resultAvailability(
        { status: 'succeeded', terminalAt: terminal, resultPurged: false },
        policy,
        new Date(terminal.getTime() + 604_800_000),
      ),
    ).toEqual({ kind: 'result_expired' });
  });
});
