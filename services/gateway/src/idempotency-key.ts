import { IDEMPOTENCY_KEY_REGEXP } from '@dnc/api-contract';
import type { FastifyRequest } from 'fastify';
import { PublicHttpError } from './errors.js';

/**
 * Spec, Idempotency 1: required; 1 to 255 visible ASCII characters, no spaces. A repeated header is
 * ambiguous and rejected too (Node would join the values).
 */
export function idempotencyKeyOf(request: FastifyRequest): string {
  const raw = request.raw.rawHeaders;
  let count = 0;
  let value: string | undefined;
  for (let i = 0; i < raw.length; i += 2) {
    if (raw[i]!.toLowerCase() === 'idempotency-key') {
      count++;
      value = raw[i + 1];
    }
  }
  if (count === 0 || value === undefined) {
    throw new PublicHttpError('validation_error', 'The Idempotency-Key header is required.');
  }
  if (count > 1) throw new PublicHttpError('validation_error', 'Send the Idempotency-Key header once.');
  if (!IDEMPOTENCY_KEY_REGEXP.test(value)) {
    throw new PublicHttpError(
      'validation_error',
      'Idempotency-Key must be 1 to 255 visible ASCII characters without spaces.',
    );
  }
  return value;
}
