import { create } from '@bufbuild/protobuf';
import type { Client } from '@connectrpc/connect';
import { Batcher, Code, ConnectError, publicError } from '@dnc/kit';
import { quotav1 } from '@dnc/proto';
import type { Kind } from './domain/idempotency.js';
import type { Refusals } from './public-errors.js';

const USAGE_KIND: Record<Kind, quotav1.UsageKind> = { sync: 1, job: 2 };

/** The public reason of quota's refusal: the one failure of a reserve known to have reserved nothing. */
export const QUOTA_EXCEEDED = 'customer_quota_exceeded';

/**
 * Admission's side of the quota ledger: a reservation per admission (its id is the admission id),
 * committed when a v1 request completes, released when it is undone. Quota is the judge: a
 * reservation released is never committed, and each call is idempotent by the reservation id.
 */
export class Reservations {
  /**
   * Reservations go to quota in batches (ReserveMany: one Postgres round trip for all of them), each
   * with the answer the single Reserve would give.
   */
  private readonly reserves = new Batcher<quotav1.ReserveRequest, void>(
    async (items) => {
      const res = await this.quota.reserveMany({ reservations: items });
      return res.outcomes.map((outcome, i) => this.reserveAnswer(outcome, items[i]!.country));
    },
    { maxBatch: 256, maxInFlight: 2, sameTurn: true },
  );

  constructor(
    private readonly quota: Client<typeof quotav1.QuotaService>,
    private readonly refusals: Refusals,
  ) {}

  private reserveAnswer(outcome: quotav1.ReserveOutcome, country: string): Error | undefined {
    switch (outcome) {
      case quotav1.ReserveOutcome.OK:
        return undefined;
      case quotav1.ReserveOutcome.QUOTA_EXCEEDED:
        return this.refusals.reject(
          publicError(Code.ResourceExhausted, QUOTA_EXCEEDED, {
            message: 'The monthly quota of this country is used up; ask for a higher quota.',
            country,
          }),
        );
      case quotav1.ReserveOutcome.ID_CONFLICT:
        return new ConnectError('reservation id already used for another reservation', Code.AlreadyExists);
      case quotav1.ReserveOutcome.RELEASED:
        return new ConnectError('reservation already released', Code.FailedPrecondition);
      default:
        return new ConnectError('quota answered no outcome', Code.Internal);
    }
  }

  /** Reserve `amount` for an admission, as one item of a ReserveMany batch. */
  reserve(admissionId: string, orgId: string, country: string, amount: number, kind: Kind): Promise<void> {
    return this.reserves.submit(
      create(quotav1.ReserveRequestSchema, {
        reservationId: admissionId,
        orgId,
        country,
        amount: BigInt(amount),
        kind: USAGE_KIND[kind],
      }),
    );
  }

  /**
   * Commit reservations in one CommitMany; the map holds an Error for each id whose commit failed.
   * `timeoutMs`: quota commits within it or not at all (its lock waits end by then). It goes as the call's
   * deadline and as the moment it ends, so a call held on its way to quota does not get its time again.
   */
  async commit(ids: string[], timeoutMs?: number): Promise<Map<string, Error | undefined>> {
    const out = new Map<string, Error | undefined>();
    if (ids.length === 0) return out;
    const bounded = timeoutMs === undefined ? undefined : Math.max(1, Math.floor(timeoutMs));
    const res = await this.quota.commitMany(
      {
        reservationIds: ids,
        deadlineUnixMs: bounded === undefined ? 0n : BigInt(Date.now() + bounded),
      },
      bounded === undefined ? {} : { timeoutMs: bounded },
    );
    ids.forEach((id, i) => {
      const outcome = res.outcomes[i];
      out.set(
        id,
        outcome === quotav1.CommitOutcome.COMMITTED
          ? undefined
          : outcome === quotav1.CommitOutcome.RELEASED
            ? new ConnectError('reservation already released', Code.FailedPrecondition)
            : new ConnectError('unknown reservation', Code.NotFound),
      );
    });
    return out;
  }

  /** Release a reservation; `committed` when it had been committed already (nothing released). */
  release(admissionId: string): Promise<quotav1.ReleaseResponse> {
    return this.quota.release({ reservationId: admissionId });
  }
}
