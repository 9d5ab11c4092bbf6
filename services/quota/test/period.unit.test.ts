import { describe, expect, it } from 'vitest';
import { periodOf, transition } from '../src/domain/period.js';

describe('quota period (UTC calendar month)', () => {
  it('uses the UTC month, not the local one', () => {
    expect(periodOf(new Date('2026-01-31T23:59:59.999Z'))).toBe('2026-01');
    expect(periodOf(new Date('2026-02-01T00:00:00.000Z'))).toBe('2026-02');
    expect(periodOf(new Date('2026-12-31T23:00:00-05:00'))).toBe('2027-01');
  });
});

describe('reservation transitions are idempotent', () => {
  it('applies commit and release only from reserved', () => {
    expect(transition('reserved', 'commit')).toBe('apply');
    expect(transition('reserved', 'release')).toBe('apply');
  });
  it('repeats are no-ops', () => {
    expect(transition('committed', 'commit')).toBe('noop');
    expect(transition('released', 'release')).toBe('noop');
  });
  it('a released reservation cannot be committed; a committed one is not released', () => {
    expect(transition('released', 'commit')).toBe('refuse');
    expect(transition('committed', 'release')).toBe('noop');
  });
});
