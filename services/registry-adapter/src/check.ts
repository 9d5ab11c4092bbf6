import { outcomeOfNormalized } from '@dnc/numbering';
import { registryv1 } from '@dnc/proto';
import { ProviderError, type RegistryProvider } from './providers/provider.js';
import type { Normalizer } from './validation.js';

const { Outcome } = registryv1;

export interface CheckAnswer {
  /** One outcome per input, in input order (every Outcome value fits one byte: kit checkResponse). */
  outcomes: Uint8Array;
  snapshotId: string;
  snapshotTime: Date | undefined;
}

/**
 * Classify every input, in input order: structural validation first (an input that does not validate
 * is invalid with its reason, never looked up and never safe), then ONE provider lookup for the
 * valid keys of the batch, so every outcome comes from one snapshot.
 *
 * An input is invalid here exactly when the numbering rules (@dnc/numbering) say so, with their
 * reason: a provider answers registered or not (1 or 0) and nothing else, so no valid input is ever
 * answered invalid (OUTCOME_INVALID_REGISTRY_REJECTED). The adapter announces this in discovery
 * (`numbering_rules`), and the gateway bounds a v2 job's result on it; a provider that could reject
 * valid numbers must change both.
 */
export async function checkPhones(
  phones: readonly string[],
  normalizer: Normalizer,
  provider: RegistryProvider,
  signal: AbortSignal,
): Promise<CheckAnswer> {
  const outcomes = new Uint8Array(phones.length);
  const keys = new Float64Array(phones.length);
  const positions = new Uint32Array(phones.length);
  let valid = 0;
  for (let i = 0; i < phones.length; i++) {
    const key = normalizer.normalize(phones[i] as string);
    const outcome = outcomeOfNormalized(key);
    if (outcome === Outcome.UNSPECIFIED) {
      keys[valid] = key;
      positions[valid++] = i;
    } else {
      outcomes[i] = outcome;
    }
  }
  const { snapshotId, snapshotTime, registered } = await provider.lookup(keys.subarray(0, valid), signal);
  if (registered.length !== valid) throw new Error('provider answered a different number of keys');
  for (let j = 0; j < valid; j++) {
    const answer = registered[j];
    // Anything but 0 or 1 is a malformed answer: never read as "not registered".
    if (answer !== 0 && answer !== 1)
      throw new ProviderError('unavailable', 'provider answered malformed data');
    outcomes[positions[j] as number] = answer === 1 ? Outcome.PROHIBITED : Outcome.SAFE;
  }
  return { outcomes, snapshotId, snapshotTime };
}
