import {
  checkInvariants,
  formatViolations,
  type InvariantName,
  type Stack,
  stackTarget,
} from '@dnc/devstack';
import { expect } from 'vitest';

/**
 * The invariant checker (packages/devstack/src/invariants.ts) over a stack, after a fault test: waits
 * up to `settleMs` for the stack to drain and reconcile, then fails the test with one line per
 * violation. `canaries` are the test's phone numbers (as written and as digits).
 */
export async function expectInvariants(
  stack: Stack,
  options: { canaries?: readonly string[]; settleMs?: number; skip?: InvariantName[] } = {},
): Promise<void> {
  const violations = await checkInvariants(stackTarget(stack, options.canaries ?? []), {
    settleMs: options.settleMs ?? 20_000,
    skip: options.skip,
  });
  expect(violations, formatViolations(violations)).toEqual([]);
}
