import type { FastifyRequest } from 'fastify';
import { type Sealed, type SealingKeys, Unopenable } from './domain/sealing.js';
import { HttpError } from './upstream.js';

/**
 * The seed of a member's second factor, opened for one check. When it cannot be opened (its key is not
 * configured, or a wrong key is), the check fails closed: the person gets `503 second_factor_unavailable`
 * and is not signed in; the log names the key id and the member, never a key, a seed or a stack.
 */
export function openSeed(keys: SealingKeys, request: FastifyRequest, memberId: string, seed: Sealed): string {
  try {
    return keys.open(seed, memberId);
  } catch (error) {
    if (!(error instanceof Unopenable)) throw error;
    request.log.error(
      { keyId: error.keyId, memberId },
      'TOTP seed cannot be opened with the configured keys (DNC_TOTP_KEYS): second factor refused',
    );
    throw new HttpError(
      503,
      'second_factor_unavailable',
      'Your second factor cannot be checked right now. Try again later; if it persists, tell your administrator.',
    );
  }
}
