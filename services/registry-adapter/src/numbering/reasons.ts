import { registryv1 } from '@dnc/proto';

const { Outcome } = registryv1;

/** The public `reason` strings of the scrub API (spec: invalid_numbers[].reason). */
export type InvalidReason =
  | 'unparseable'
  | 'invalid_length'
  | 'invalid_number'
  | 'wrong_country'
  | 'obsolete_format'
  | 'registry_rejected';

const REASONS: ReadonlyMap<registryv1.Outcome, InvalidReason> = new Map([
  [Outcome.INVALID_UNPARSEABLE, 'unparseable'],
  [Outcome.INVALID_LENGTH, 'invalid_length'],
  [Outcome.INVALID_NUMBER, 'invalid_number'],
  [Outcome.INVALID_WRONG_COUNTRY, 'wrong_country'],
  [Outcome.INVALID_OBSOLETE_FORMAT, 'obsolete_format'],
  [Outcome.INVALID_REGISTRY_REJECTED, 'registry_rejected'],
]);

/** The public reason of an invalid outcome; undefined for SAFE, PROHIBITED and UNSPECIFIED. */
export function reasonOf(outcome: registryv1.Outcome): InvalidReason | undefined {
  return REASONS.get(outcome);
}

/** Every invalid outcome with its public reason, in enum order. */
export const INVALID_REASONS: ReadonlyArray<readonly [registryv1.Outcome, InvalidReason]> = [...REASONS];
