import { describe, expect, it } from 'vitest';
import { admissionBudgetStart, deadlineOf, UPLOAD_LEFT_OUT_MAX_MS } from '../src/deadline.js';

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

  it("at most 10 s of it: the service's calls end within 15 s of the arrival", () => {
    expect(UPLOAD_LEFT_OUT_MAX_MS).toBe(10_000);
    expect(admissionBudgetStart({ receivedAt, uploadMs: 10_000 })).toBe(receivedAt + 10_000);
    expect(admissionBudgetStart({ receivedAt, uploadMs: 10_001 })).toBe(receivedAt + 10_000);
    expect(admissionBudgetStart({ receivedAt, uploadMs: 59_000 })).toBe(receivedAt + 10_000);
    // A request whose upload took 40 s has no budget left: its deadline is already past (no call is made).
    const deadline = deadlineOf(
      admissionBudgetStart({ receivedAt: Date.now() - 40_000, uploadMs: 40_000 }),
      5_000,
    );
    expect(deadline.expired()).toBe(true);
  });
});
