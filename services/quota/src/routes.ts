import { create } from '@bufbuild/protobuf';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import type { ConnectRouter, ServiceImpl } from '@connectrpc/connect';
import { Code, Counter, type Logger, publicError, type Registry, readPublicReason } from '@dnc/kit';
import { quotav1 } from '@dnc/proto';
import { isCountryCode } from './domain/period.js';
import { type Account, type Ledger, QUOTA_EXCEEDED } from './ledger.js';

export interface QuotaDeps {
  ledger: Ledger;
  logger: Logger;
  metrics: Registry;
}

/** Counts above 2^53 cannot be represented exactly in the ledger's numbers. */
const MAX_AMOUNT = BigInt(Number.MAX_SAFE_INTEGER);

function invalid(message: string) {
  return publicError(Code.InvalidArgument, 'validation_error', { message });
}

function requireId(value: string, name: string): string {
  if (!value || value.length > 200) throw invalid(`${name} is required (at most 200 characters)`);
  return value;
}

function requireCountry(value: string): string {
  if (!isCountryCode(value)) throw invalid('country must be one of mx, ar, co, es, au, sg');
  return value;
}

function toNumber(value: bigint, name: string): number {
  if (value > MAX_AMOUNT) throw invalid(`${name} is too large`);
  return Number(value);
}

function accountMessage(a: Account) {
  return create(quotav1.QuotaAccountSchema, {
    orgId: a.orgId,
    country: a.country,
    period: a.period,
    limit: BigInt(a.limit),
    used: BigInt(a.used),
    reserved: BigInt(a.reserved),
  });
}

export function quotaService(deps: QuotaDeps): ServiceImpl<typeof quotav1.QuotaService> {
  const rejections = new Counter({
    name: 'dnc_quota_rejections_total',
    help: 'Reservations refused because they did not fit the monthly quota, by country.',
    labelNames: ['country'],
    registers: [deps.metrics],
  });
  const operations = new Counter({
    name: 'dnc_quota_operations_total',
    help: 'Ledger operations applied or repeated, by operation.',
    labelNames: ['operation'],
    registers: [deps.metrics],
  });
  return {
    async reserve(req) {
      const input = {
        reservationId: requireId(req.reservationId, 'reservation_id'),
        orgId: requireId(req.orgId, 'org_id'),
        country: requireCountry(req.country),
        amount: toNumber(req.amount, 'amount'),
        kind: req.kind,
      };
      try {
        await deps.ledger.reserve(input);
      } catch (error) {
        if (readPublicReason(error)?.reason === QUOTA_EXCEEDED) rejections.inc({ country: input.country });
        throw error;
      }
      operations.inc({ operation: 'reserve' });
      return {};
    },
    async commit(req) {
      await deps.ledger.commit(requireId(req.reservationId, 'reservation_id'));
      operations.inc({ operation: 'commit' });
      return {};
    },
    async release(req) {
      const { committed } = await deps.ledger.release(requireId(req.reservationId, 'reservation_id'));
      operations.inc({ operation: 'release' });
      return { committed };
    },
  };
}

export function quotaAdminService(deps: QuotaDeps): ServiceImpl<typeof quotav1.QuotaAdminService> {
  return {
    async setLimit(req) {
      const account = await deps.ledger.setLimit(
        requireId(req.orgId, 'org_id'),
        requireCountry(req.country),
        toNumber(req.limit, 'limit'),
      );
      return { quotaAccount: accountMessage(account) };
    },
    async getQuota(req) {
      const accounts = await deps.ledger.accounts(requireId(req.orgId, 'org_id'));
      return { accounts: accounts.map(accountMessage) };
    },
    async listUsage(req) {
      const country = req.country ? requireCountry(req.country) : undefined;
      const usage = await deps.ledger.usage(requireId(req.orgId, 'org_id'), country);
      return {
        records: usage.map((u) =>
          create(quotav1.UsageRecordSchema, {
            time: timestampFromDate(u.time),
            country: u.country,
            count: BigInt(u.count),
            kind: u.kind,
            reservationId: u.reservationId,
          }),
        ),
      };
    },
  };
}

export function quotaRoutes(deps: QuotaDeps) {
  return (router: ConnectRouter) => {
    router.service(quotav1.QuotaService, quotaService(deps));
    router.service(quotav1.QuotaAdminService, quotaAdminService(deps));
  };
}
