import { describe, expect, it } from 'vitest';
import { admissionBudgetStart, deadlineOf, StopClock, UPLOAD_LEFT_OUT_MAX_MS } from '../src/deadline.js';

// Spec, POST /v2/scrub: "The 5-second admission budget covers authentication, validation, entitlement,
// quota reservation and enqueueing, not execution." The client's upload is not among them, but an answer
// still comes within a bounded time of the arrival (the drain, the organization assertion's life).
describe('where the v2 admission budget starts (admissionBudgetStart)', () => {
  const receivedAt = 1_765_000_000_000;

  it('a body that arrived at once: at the arrival', () => {
    expect(admissionBudgetStart({ receivedAt, uploadMs: 0 })).toBe(receivedAt);
  });

  it("the upload's time is left out", () => {
    expect(admissionBudgetStart({ receivedAt, uploadMs: 4_200 })).toBe(receivedAt + 4_200);
  });

  it("at most 45 s of it: the service's calls end within about 50 s of the arrival", () => {
    // Inside the organization assertion's life after it is handed out (at least 60 s) and the SDK's attempt
    // timeout (60 s). It was 10 s: an 8 MB body over a link slower than about 5 Mbit/s was answered 503.
    expect(UPLOAD_LEFT_OUT_MAX_MS).toBe(45_000);
    expect(admissionBudgetStart({ receivedAt, uploadMs: 12_000 })).toBe(receivedAt + 12_000);
    expect(admissionBudgetStart({ receivedAt, uploadMs: 45_000 })).toBe(receivedAt + 45_000);
    expect(admissionBudgetStart({ receivedAt, uploadMs: 45_001 })).toBe(receivedAt + 45_000);
    expect(admissionBudgetStart({ receivedAt, uploadMs: 59_000 })).toBe(receivedAt + 45_000);
    // A request whose upload took 55 s has no budget left: its deadline is already past (no call is made).
    const deadline = deadlineOf(
      admissionBudgetStart({ receivedAt: Date.now() - 55_000, uploadMs: 55_000 }),
      5_000,
    );
    expect(deadline.expired()).toBe(true);
  });
});

describe('a stopping gateway (StopClock): no call of a request outlives the shutdown bound', () => {
  it('until told to stop, no bound; then the bound less the time to answer', () => {
    const clock = new StopClock();
    expect(clock.notAfter).toBe(Number.POSITIVE_INFINITY);
    clock.begin(20_000, 1_000_000);
    expect(clock.notAfter).toBe(1_000_000 + 20_000 - StopClock.ANSWER_MARGIN_MS);
    // Told twice (a second signal): the earlier bound stands.
    clock.begin(20_000, 1_005_000);
    expect(clock.notAfter).toBe(1_018_000);
  });

  it("a deadline ends at the bound when that comes first, at the budget's end otherwise", () => {
    const now = Date.now();
    const cut = deadlineOf(now, 5_000, now + 1_000);
    expect(cut.remaining()).toBeLessThanOrEqual(1_000);
    expect(cut.remaining()).toBeGreaterThan(900);
    const whole = deadlineOf(now, 5_000, now + 60_000);
    expect(whole.remaining()).toBeGreaterThan(4_900);
    expect(deadlineOf(now, 5_000, now - 1).expired()).toBe(true);
  });
});
