import { registryv1 } from '@dnc/proto';
import type { RegistryProvider } from './providers/provider.js';
import { isRegistryKey, type Normalizer } from './validation.js';

const { Outcome } = registryv1;

export interface CheckAnswer {
  outcomes: registryv1.Outcome[];
  snapshotId: string;
  snapshotTime: Date | undefined;
}

/**
 * Classify every input, in input order: structural validation first (an input that does not validate
 * is invalid with its reason, never looked up and never safe), then ONE provider lookup for the
 * valid keys of the batch, so every outcome comes from one snapshot.
 */
export async function checkPhones(
  phones: readonly string[],
  normalizer: Normalizer,
  provider: RegistryProvider,
  signal: AbortSignal,
): Promise<CheckAnswer> {
  const outcomes = new Array<registryv1.Outcome>(phones.length);
  const keys = new Float64Array(phones.length);
  const positions = new Uint32Array(phones.length);
  let valid = 0;
  for (let i = 0; i < phones.length; i++) {
    const key = normalizer.normalize(phones[i] as string);
    if (isRegistryKey(key)) {
      keys[valid] = key;
      positions[valid++] = i;
    } else {
      outcomes[i] = invalidOutcome(key);
    }
  }
  const { snapshotId, snapshotTime, registered } = await provider.lookup(keys.subarray(0, valid), signal);
  if (registered.length !== valid) throw new Error('provider answered a different number of keys');
  for (let j = 0; j < valid; j++) {
    outcomes[positions[j] as number] = registered[j] === 1 ? Outcome.PROHIBITED : Outcome.SAFE;
  }
  return { outcomes, snapshotId, snapshotTime };
}

/** `-Outcome` from the normalizer; anything else it might return is treated as unparseable, never safe. */
function invalidOutcome(key: number): registryv1.Outcome {
  const o = -key;
  return o >= Outcome.INVALID_UNPARSEABLE && o <= Outcome.INVALID_REGISTRY_REJECTED && Number.isInteger(o)
    ? (o as registryv1.Outcome)
    : Outcome.INVALID_UNPARSEABLE;
}
