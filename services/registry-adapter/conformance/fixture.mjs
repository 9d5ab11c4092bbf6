// `--load-fixture`: which fixture numbers the kit may remove again at the end.
import { registryv1 } from '@dnc/proto';
import { assert, name } from './assert.mjs';

const { Outcome } = registryv1;

/**
 * The fixture numbers the registry does not hold yet: the only ones the kit may remove at the end (found by
 * a review, 2026-12-04: the kit removed every fixture number, so a fixture holding a real registration,
 * run against a deployment with the real registry, would have removed it and answered it `safe`). Known
 * only from the registry's current snapshot (admin GetRegistryStatus): a registry with none holds none;
 * otherwise the replica must serve that snapshot (one starting, still reading it, or behind it answers
 * from another or not at all) and answer each number it may remove SAFE. Anything else: not loaded.
 */
export async function notYetRegistered(conn, country, registered) {
  const status = await conn.registryStatus();
  if (status.snapshotId === '') return [...registered];
  const refuse = (why) =>
    new Error(
      `the kit could not tell which fixture numbers the registry holds already (${why}); the fixture was not loaded`,
    );
  let answer;
  for (let i = 0; i < 50; i++) {
    answer = await conn.check(country, registered).catch((error) => ({ error }));
    if (!answer.error && answer.snapshotId === status.snapshotId) break;
    await new Promise((res) => setTimeout(res, 200));
  }
  if (answer.error) throw refuse(answer.error?.message ?? String(answer.error));
  if (answer.snapshotId !== status.snapshotId)
    throw refuse(
      `the replica answers from snapshot ${answer.snapshotId}, the registry's is ${status.snapshotId}`,
    );
  assert(answer.outcomes.length === registered.length, 'one outcome per input');
  const unclear = answer.outcomes.findIndex((o) => o !== Outcome.PROHIBITED && o !== Outcome.SAFE);
  if (unclear >= 0) throw refuse(`fixture input #${unclear} answered ${name(answer.outcomes[unclear])}`);
  return registered.filter((_, i) => answer.outcomes[i] === Outcome.SAFE);
}
