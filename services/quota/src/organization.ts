import { create } from '@bufbuild/protobuf';
import type { ServiceImpl } from '@connectrpc/connect';
import { UUID_REGEXP } from '@dnc/api-contract/limits';
import { type Pool, validationError } from '@dnc/kit';
import { quotav1 } from '@dnc/proto';
import type { Ledger } from './store/ledger.js';

/**
 * An organization's id in a call: a lowercase UUID, the form admission reserves with. Any other (upper
 * case, a space pasted beside it) named an account no reservation uses (a review, 2026-12-05).
 */
export function requireOrgId(value: string): string {
  if (!UUID_REGEXP.test(value)) throw validationError('org_id must be a lowercase UUID');
  return value;
}

/** The usage chart's longest range. */
export const MAX_USAGE_DAYS = 90;

export interface DailyRow {
  day: string;
  country: string;
  v1: number;
  v2: number;
}

/**
 * Checked inputs of one organization per UTC day and country, v1 (synchronous) and v2 (jobs) apart,
 * from the usage records (one per committed reservation), over the days from `fromDay` on.
 */
export async function dailyUsage(pool: Pool, orgId: string, fromDay: string): Promise<DailyRow[]> {
  const r = await pool.query<{ day: string; country: string; v1: number; v2: number }>(
    `SELECT to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS day, country,
            COALESCE(sum(count) FILTER (WHERE kind = $3), 0)::bigint AS v1,
            COALESCE(sum(count) FILTER (WHERE kind = $4), 0)::bigint AS v2
     FROM quota.usage_records
     WHERE org_id = $1 AND created_at >= ($2::date)::timestamp AT TIME ZONE 'UTC'
     GROUP BY 1, 2 ORDER BY 1, 2`,
    [orgId, fromDay, quotav1.UsageKind.SYNC, quotav1.UsageKind.JOB],
  );
  return r.rows;
}

/** The first UTC day of a range of `days` days ending today. */
export function firstDay(now: Date, days: number): string {
  const start = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() - (days - 1)));
  return start.toISOString().slice(0, 10);
}

/** OrganizationQuotaService: one organization's month figures and daily usage. */
export function organizationQuotaService(deps: {
  ledger: Ledger;
  pool: Pool;
  now?: () => Date;
}): ServiceImpl<typeof quotav1.OrganizationQuotaService> {
  return {
    async getMonthQuota(req) {
      const accounts = await deps.ledger.accounts(requireOrgId(req.orgId));
      return {
        accounts: accounts.map((a) =>
          create(quotav1.QuotaAccountSchema, {
            orgId: a.orgId,
            country: a.country,
            period: a.period,
            limit: BigInt(a.limit),
            used: BigInt(a.used),
            reserved: BigInt(a.reserved),
          }),
        ),
      };
    },

    async getDailyUsage(req) {
      const orgId = requireOrgId(req.orgId);
      const days = req.days === 0 ? MAX_USAGE_DAYS : req.days;
      if (days < 1 || days > MAX_USAGE_DAYS)
        throw validationError(`days must be from 1 to ${MAX_USAGE_DAYS}`);
      const fromDay = firstDay((deps.now ?? (() => new Date()))(), days);
      const rows = await dailyUsage(deps.pool, orgId, fromDay);
      return {
        fromDay,
        days: rows.map((row) =>
          create(quotav1.DailyUsageSchema, {
            day: row.day,
            country: row.country,
            v1Count: BigInt(row.v1),
            v2Count: BigInt(row.v2),
          }),
        ),
      };
    },
  };
}
