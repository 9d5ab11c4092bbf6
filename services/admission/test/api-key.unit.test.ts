import { describe, expect, it } from 'vitest';
import {
  digestMatches,
  digestOf,
  displayPrefix,
  generateApiKey,
  parseApiKey,
} from '../src/domain/api-key.js';

describe('API keys (issue 3 item 2)', () => {
  it('have a recognizable prefix and 256 bits of randomness; only a digest and public id are kept', () => {
    const k = generateApiKey();
    expect(k.apiKey).toMatch(/^dnc_[0-9a-f]{12}_[A-Za-z0-9_-]{43}$/);
    const secret = k.apiKey.split('_').slice(2).join('_');
    expect(Buffer.from(secret, 'base64url')).toHaveLength(32);
    expect(k.digest.equals(digestOf(k.apiKey))).toBe(true);
    expect(displayPrefix(k.publicId)).toBe(k.apiKey.slice(0, 16));
    expect(k.apiKey.includes(k.digest.toString('hex'))).toBe(false);
  });

  it('two keys never share a secret or a public id', () => {
    const keys = Array.from({ length: 200 }, () => generateApiKey());
    expect(new Set(keys.map((k) => k.apiKey)).size).toBe(200);
    expect(new Set(keys.map((k) => k.publicId)).size).toBe(200);
  });

  it('parses only well-formed keys (malformed -> no lookup at all)', () => {
    const k = generateApiKey();
    expect(parseApiKey(k.apiKey)?.publicId).toBe(k.publicId);
    for (const bad of [
      '',
      'Bearer x',
      `${k.apiKey} `,
      k.apiKey.slice(0, -1),
      k.apiKey.replace('dnc_', 'dnx_'),
      `${k.apiKey}a`,
    ]) {
      expect(parseApiKey(bad)).toBeUndefined();
    }
  });

  it('matches the stored digest only for the exact key; unknown key compares against a dummy', () => {
    const k = generateApiKey();
    const other = generateApiKey();
    expect(digestMatches(digestOf(k.apiKey), k.digest)).toBe(true);
    expect(digestMatches(digestOf(other.apiKey), k.digest)).toBe(false);
    expect(digestMatches(digestOf(k.apiKey), undefined)).toBe(false);
    expect(digestMatches(Buffer.alloc(32), undefined)).toBe(false);
  });
});
