import { describe, expect, it } from 'vitest';
import { acceptRequestId, isWellFormedRequestId } from '../src/request-context.js';

// A request id is written unmasked into every log line of its request, in every service it reaches. Found
// by a leak review (2026-12-05): a phone number or an API key sent as X-Request-Id was logged as it was.
describe('request ids a client may choose', () => {
  it('keeps UUIDs, ULIDs and tracing ids, at 128 characters and not past it', () => {
    for (const id of [
      '5fd94b96-0c5d-4d55-a9ef-71ee5dbbe48e',
      '12345678-1234-4234-8234-123456789012',
      '01J9ZQ3K5X7W2V8T4R6P0N1M3L',
      '01ARZ3NDEKTSV4RRFFQ69G5FAV',
      'order-2026.12.05:7',
      'req-20261205-a',
      '12345',
      'x'.repeat(128),
    ])
      expect(isWellFormedRequestId(id), id).toBe(true);
    expect(isWellFormedRequestId('x'.repeat(129))).toBe(false);
  });

  it('replaces a phone number or an API key with a new UUID', () => {
    for (const id of [
      '5215512345678',
      '52-155-1234-5678',
      '55.1234.5678',
      '123456',
      `dnc_0123456789ab_${'A'.repeat(43)}`,
      'mine-dnc_0123456789ab_x',
      // The same number inside a longer id (found by the next leak review, 2026-12-05).
      'lead-5215512345678',
      'tel:55-1234-5678',
      'crm.3001234567.retry',
      'req-1765000000000',
    ]) {
      expect(isWellFormedRequestId(id), id).toBe(false);
      const replaced = acceptRequestId(id);
      expect(replaced).not.toBe(id);
      expect(replaced).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    }
  });
});
