import { create } from '@bufbuild/protobuf';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import type { ConnectRouter, HandlerContext, ServiceImpl } from '@connectrpc/connect';
import { COUNTRY_CODES, isCountryCode } from '@dnc/api-contract/limits';
import { Counter, commitBy, type Logger, type Registry, readPublicReason, validationError } from '@dnc/kit';
import { quotav1 } from '@dnc/proto';
import { requireOrgId } from './organization.js';
import {
  type Account,
  type CommitOutcome,
  type Ledger,
  QUOTA_EXCEEDED,
  type ReserveInput,
  type ReserveOutcome,
} from './store/ledger.js';

export interface QuotaDeps {
  ledger: Ledger;
  logger: Logger;
  metrics: Registry;
}

/** Counts above 2^53 cannot be represented exactly in the ledger's numbers. */
const MAX_AMOUNT = BigInt(Number.MAX_SAFE_INTEGER);

/** What a commit or release keeps of its caller's deadline for its answer to travel back. */
const COMMIT_ANSWER_MS = 100;

/**
 * The bound of a call's lock waits: its caller's deadline, less the answer's way back. `deadlineUnixMs`
 * (epoch ms, 0: none) is the same deadline as a moment: the call's own counts from its arrival, so a call
 * held on its way would get its whole time again after its caller gave up (kit `commitBy`).
 */
const lockBound = (ctx: HandlerContext, deadlineUnixMs = 0n): number | undefined => {
  const now = Date.now();
  const by = commitBy(now, ctx.timeoutMs(), deadlineUnixMs, `quota.${ctx.method.name}`);
  return Number.isFinite(by) ? by - now - COMMIT_ANSWER_MS : undefined;
};

/** The most items of one ReserveMany or CommitMany: one transaction holds the account that long. */
export const MAX_BATCH = 1000;

function requireId(value: string, name: string): string {
  if (!value || value.length > 200) throw validationError(`${name} is required (at most 200 characters)`);
  return value;
}

function requireCountry(value: string, name = 'country'): string {
  if (!isCountryCode(value)) throw validationError(`${name} must be one of ${COUNTRY_CODES.join(', ')}`);
  return value;
}

function toNumber(value: bigint, name: string): number {
  if (value > MAX_AMOUNT) throw validationError(`${name} is too large`);
  return Number(value);
}

function requireBatch<T>(items: T[], name: string): T[] {
  if (items.length > MAX_BATCH) throw validationError(`${name} has at most ${MAX_BATCH} items`);
  return items;
}

/** A checked ReserveRequest; `at` names the field in errors (`reservations[3].`). */
function reserveInput(req: quotav1.ReserveRequest, at = ''): ReserveInput {
  return {
    reservationId: requireId(req.reservationId, `${at}reservation_id`),
    orgId: requireId(req.orgId, `${at}org_id`),
    country: requireCountry(req.country, `${at}country`),
    amount: toNumber(req.amount, `${at}amount`),
    kind: req.kind,
  };
}

const RESERVE_OUTCOMES: Record<ReserveOutcome, quotav1.ReserveOutcome> = {
  ok: quotav1.ReserveOutcome.OK,
  quota_exceeded: quotav1.ReserveOutcome.QUOTA_EXCEEDED,
  id_conflict: quotav1.ReserveOutcome.ID_CONFLICT,
  released: quotav1.ReserveOutcome.RELEASED,
};

const COMMIT_OUTCOMES: Record<CommitOutcome, quotav1.CommitOutcome> = {
  committed: quotav1.CommitOutcome.COMMITTED,
  not_found: quotav1.CommitOutcome.NOT_FOUND,
  released: quotav1.CommitOutcome.RELEASED,
};

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
      const input = reserveInput(req);
      try {
        await deps.ledger.reserve(input);
      } catch (error) {
        if (readPublicReason(error)?.reason === QUOTA_EXCEEDED) rejections.inc({ country: input.country });
        throw error;
      }
      operations.inc({ operation: 'reserve' });
      return {};
    },
    async commit(req, ctx) {
      // As for commitMany: a commit its caller stopped waiting for fails instead of charging later.
      await deps.ledger.commit(requireId(req.reservationId, 'reservation_id'), lockBound(ctx));
      operations.inc({ operation: 'commit' });
      return {};
    },
    async release(req, ctx) {
      const { committed } = await deps.ledger.release(
        requireId(req.reservationId, 'reservation_id'),
        lockBound(ctx),
      );
      operations.inc({ operation: 'release' });
      return { committed };
    },
    async reserveMany(req) {
      const inputs = requireBatch(req.reservations, 'reservations').map((r, i) =>
        reserveInput(r, `reservations[${i}].`),
      );
      const outcomes = await deps.ledger.reserveMany(inputs);
      let reserved = 0;
      outcomes.forEach((outcome, i) => {
        if (outcome === 'ok') reserved++;
        else if (outcome === 'quota_exceeded') rejections.inc({ country: inputs[i]!.country });
      });
      if (reserved > 0) operations.inc({ operation: 'reserve' }, reserved);
      return { outcomes: outcomes.map((o) => RESERVE_OUTCOMES[o]) };
    },
    async commitMany(req, ctx) {
      const ids = requireBatch(req.reservationIds, 'reservation_ids').map((id, i) =>
        requireId(id, `reservation_ids[${i}]`),
      );
      // The caller's deadline bounds the commit's lock waits, less the time its answer takes back: a
      // commit its caller stopped waiting for would be a charge for a request answered with an error.
      const outcomes = await deps.ledger.commitMany(ids, lockBound(ctx, req.deadlineUnixMs));
      const committed = outcomes.filter((o) => o === 'committed').length;
      if (committed > 0) operations.inc({ operation: 'commit' }, committed);
      return { outcomes: outcomes.map((o) => COMMIT_OUTCOMES[o]) };
    },
  };
}

export function quotaAdminService(deps: QuotaDeps): ServiceImpl<typeof quotav1.QuotaAdminService> {
  return {
    async setLimit(req) {
      const account = await deps.ledger.setLimit(
        requireOrgId(req.orgId),
        requireCountry(req.country),
        toNumber(req.limit, 'limit'),
      );
      return { quotaAccount: accountMessage(account) };
    },
    async getQuota(req) {
      const accounts = await deps.ledger.accounts(requireOrgId(req.orgId));
      return { accounts: accounts.map(accountMessage) };
    },
    async listUsage(req) {
      const country = req.country ? requireCountry(req.country) : undefined;
      const usage = await deps.ledger.usage(requireOrgId(req.orgId), country);
      return {
        records: usage.map((u) =>
          create(quotav1.UsageRecordSchema, {
            time: timestampFromDate(u.time),
            country: u.country,
            period: u.period,
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
  return {
    data: (router: ConnectRouter) => {
      router.service(quotav1.QuotaService, quotaService(deps));
    },
    /** On the admin listener: operator (and admission's SetLimit for a purchase), audited. */
    admin: (router: ConnectRouter) => {
      router.service(quotav1.QuotaAdminService, quotaAdminService(deps));
    },
  };
}
