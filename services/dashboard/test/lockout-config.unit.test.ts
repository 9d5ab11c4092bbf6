import { describe, expect, it } from 'vitest';
import { dashboardConfig } from '../src/config.js';
import { failuresInFirstDay } from '../src/store/members.js';

const BASE = {
  DATABASE_URL: 'postgres://127.0.0.1/x',
  DNC_TOTP_KEYS: `t1:${Buffer.alloc(32, 3).toString('base64')}`,
  DNC_TOTP_KEY_ACTIVE_ID: 't1',
};

// NIST SP 800-63B 5.2.2: at most 100 consecutive failed attempts on one account. Found by a review
// (2026-12-05): with escalating locks the defaults allow 35 in a run's first day, but the settings alone
// (up to 100 failures a lock) allowed about 700.
describe('lockout settings within 100 failures a day', () => {
  it('counts the failures a run allows in its first day', () => {
    expect(failuresInFirstDay({ limit: 5, lockMinutes: 15 })).toBe(35);
    expect(failuresInFirstDay({ limit: 14, lockMinutes: 15 })).toBe(98);
    expect(failuresInFirstDay({ limit: 1, lockMinutes: 1440 })).toBe(1);
  });

  it('accepts settings at 100 and refuses one past it, naming the setting', () => {
    const parse = (failures: number, minutes: number) =>
      dashboardConfig.safeParse({
        ...BASE,
        DNC_LOCKOUT_FAILURES: String(failures),
        DNC_LOCKOUT_MINUTES: String(minutes),
      });
    expect(parse(5, 15).success).toBe(true);
    expect(parse(100, 1440).success).toBe(true);
    expect(parse(14, 15).success).toBe(true);
    const refused = parse(15, 15);
    expect(refused.success).toBe(false);
    expect(refused.error?.issues.map((i) => i.path.join('.'))).toEqual(['DNC_LOCKOUT_FAILURES']);
    expect(refused.error?.issues[0]?.message).toMatch(/105 failed sign-ins.*at most 100/);
  });
});
