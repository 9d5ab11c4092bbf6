import { Code, ConnectError, inTransaction, type Pool, type PoolClient, publicError } from '@dnc/kit';
import { fits, periodOf, type ReservationState, transition } from './domain/period.js';

export interface ReserveInput {
  reservationId: string;
  orgId: string;
  country: string;
  amount: number;
  kind: number;
}

export interface Account {
  orgId: string;
  country: string;
  period: string;
  limit: number;
  used: number;
  reserved: number;
}

export interface Usage {
  time: Date;
  country: string;
  count: number;
  kind: number;
  reservationId: string;
}

export const QUOTA_EXCEEDED = 'customer_quota_exceeded';

interface ReservationRow {
  org_id: string;
  country: string;
  period: string;
  amount: number;
  kind: number;
  state: ReservationState;
}

/**
 * The ledger: every operation is one transaction. The account row of (org, country, month) is locked
 * (SELECT ... FOR UPDATE) before it is checked and changed, so parallel reservations are serialized per
 * account and `used + reserved` can never pass the limit.
 */
export class Ledger {
  constructor(
    private readonly pool: Pool,
    private readonly now: () => Date = () => new Date(),
  ) {}

  async reserve(input: ReserveInput): Promise<void> {
    await inTransaction(this.pool, async (tx) => {
      const period = periodOf(this.now());
      // Lock the account first: a concurrent reserve of the same id waits here, then sees the row.
      await tx.query(
        `INSERT INTO quota.accounts (org_id, country, period) VALUES ($1, $2, $3)
         ON CONFLICT DO NOTHING`,
        [input.orgId, input.country, period],
      );
      const account = await tx.query<{ used: number; reserved: number }>(
        `SELECT used, reserved FROM quota.accounts WHERE org_id = $1 AND country = $2 AND period = $3
         FOR UPDATE`,
        [input.orgId, input.country, period],
      );
      const existing = await tx.query<ReservationRow>(
        'SELECT org_id, country, period, amount, kind, state FROM quota.reservations WHERE reservation_id = $1',
        [input.reservationId],
      );
      const prior = existing.rows[0];
      if (prior) {
        if (
          prior.org_id !== input.orgId ||
          prior.country !== input.country ||
          prior.amount !== input.amount
        ) {
          throw new ConnectError('reservation id already used for another reservation', Code.AlreadyExists);
        }
        if (prior.state === 'released') {
          throw new ConnectError('reservation already released', Code.FailedPrecondition);
        }
        return; // reserved or committed: the same reservation again changes nothing
      }
      const limit = await tx.query<{ monthly_limit: number }>(
        'SELECT monthly_limit FROM quota.limits WHERE org_id = $1 AND country = $2',
        [input.orgId, input.country],
      );
      const { used, reserved } = account.rows[0]!;
      if (!fits(limit.rows[0]?.monthly_limit ?? 0, used, reserved, input.amount)) {
        throw publicError(Code.ResourceExhausted, QUOTA_EXCEEDED, {
          message: 'The monthly quota of this country is used up; ask for a higher quota.',
          country: input.country,
        });
      }
      await tx.query(
        `INSERT INTO quota.reservations (reservation_id, org_id, country, period, amount, kind, state)
         VALUES ($1, $2, $3, $4, $5, $6, 'reserved')`,
        [input.reservationId, input.orgId, input.country, period, input.amount, input.kind],
      );
      await tx.query(
        `UPDATE quota.accounts SET reserved = reserved + $4
         WHERE org_id = $1 AND country = $2 AND period = $3`,
        [input.orgId, input.country, period, input.amount],
      );
    });
  }

  /** Turn a reservation into usage: one usage record, exactly once. */
  async commit(reservationId: string): Promise<void> {
    await inTransaction(this.pool, async (tx) => {
      const r = await this.lockReservation(tx, reservationId);
      if (!r) throw new ConnectError('unknown reservation', Code.NotFound);
      const action = transition(r.state, 'commit');
      if (action === 'noop') return;
      if (action === 'refuse')
        throw new ConnectError('reservation already released', Code.FailedPrecondition);
      await tx.query(
        `UPDATE quota.accounts SET reserved = reserved - $4, used = used + $4
         WHERE org_id = $1 AND country = $2 AND period = $3`,
        [r.org_id, r.country, r.period, r.amount],
      );
      await tx.query(
        `UPDATE quota.reservations SET state = 'committed', updated_at = now() WHERE reservation_id = $1`,
        [reservationId],
      );
      await tx.query(
        `INSERT INTO quota.usage_records (reservation_id, org_id, country, period, count, kind)
         VALUES ($1, $2, $3, $4, $5, $6)`,
        [reservationId, r.org_id, r.country, r.period, r.amount, r.kind],
      );
    });
  }

  /**
   * Free a reservation. Releasing twice or after commit changes nothing. Releasing an id never
   * reserved leaves a released tombstone, so a late Reserve of that id cannot take quota afterwards.
   */
  async release(reservationId: string): Promise<{ committed: boolean }> {
    return inTransaction(this.pool, async (tx) => {
      const r = await this.lockReservation(tx, reservationId);
      if (!r) {
        await tx.query(
          `INSERT INTO quota.reservations (reservation_id, org_id, country, period, amount, kind, state)
           VALUES ($1, '', '', '', 0, 0, 'released') ON CONFLICT DO NOTHING`,
          [reservationId],
        );
        return { committed: false };
      }
      if (transition(r.state, 'release') !== 'apply') return { committed: r.state === 'committed' };
      await tx.query(
        `UPDATE quota.accounts SET reserved = reserved - $4
         WHERE org_id = $1 AND country = $2 AND period = $3`,
        [r.org_id, r.country, r.period, r.amount],
      );
      await tx.query(
        `UPDATE quota.reservations SET state = 'released', updated_at = now() WHERE reservation_id = $1`,
        [reservationId],
      );
      return { committed: false };
    });
  }

  private async lockReservation(tx: PoolClient, id: string): Promise<ReservationRow | undefined> {
    // Lock the account before the reservation (same order as reserve) so the two never deadlock.
    const peek = await tx.query<ReservationRow>(
      'SELECT org_id, country, period FROM quota.reservations WHERE reservation_id = $1',
      [id],
    );
    const p = peek.rows[0];
    if (!p) return undefined;
    await tx.query(
      'SELECT 1 FROM quota.accounts WHERE org_id = $1 AND country = $2 AND period = $3 FOR UPDATE',
      [p.org_id, p.country, p.period],
    );
    const r = await tx.query<ReservationRow>(
      `SELECT org_id, country, period, amount, kind, state FROM quota.reservations
       WHERE reservation_id = $1 FOR UPDATE`,
      [id],
    );
    return r.rows[0];
  }

  /** Open reservations of `kind` older than `olderThanSeconds` (left behind by a crashed caller). */
  async staleReservations(kind: number, olderThanSeconds: number, limit = 100): Promise<string[]> {
    const r = await this.pool.query<{ reservation_id: string }>(
      `SELECT reservation_id FROM quota.reservations
       WHERE state = 'reserved' AND kind = $1 AND created_at < now() - make_interval(secs => $2)
       ORDER BY created_at LIMIT $3`,
      [kind, olderThanSeconds, limit],
    );
    return r.rows.map((row) => row.reservation_id);
  }

  async setLimit(orgId: string, country: string, limit: number): Promise<Account> {
    await this.pool.query(
      `INSERT INTO quota.limits (org_id, country, monthly_limit) VALUES ($1, $2, $3)
       ON CONFLICT (org_id, country) DO UPDATE SET monthly_limit = EXCLUDED.monthly_limit, updated_at = now()`,
      [orgId, country, limit],
    );
    const accounts = await this.accounts(orgId);
    return accounts.find((a) => a.country === country)!;
  }

  /** Every country with a limit, with the figures of the current month. */
  async accounts(orgId: string): Promise<Account[]> {
    const period = periodOf(this.now());
    const r = await this.pool.query<{
      country: string;
      monthly_limit: number;
      used: number | null;
      reserved: number | null;
    }>(
      `SELECT l.country, l.monthly_limit, a.used, a.reserved
       FROM quota.limits l
       LEFT JOIN quota.accounts a ON a.org_id = l.org_id AND a.country = l.country AND a.period = $2
       WHERE l.org_id = $1 ORDER BY l.country`,
      [orgId, period],
    );
    return r.rows.map((row) => ({
      orgId,
      country: row.country,
      period,
      limit: row.monthly_limit,
      used: row.used ?? 0,
      reserved: row.reserved ?? 0,
    }));
  }

  async usage(orgId: string, country: string | undefined, limit = 1000): Promise<Usage[]> {
    const r = await this.pool.query<{
      created_at: Date;
      country: string;
      count: number;
      kind: number;
      reservation_id: string;
    }>(
      `SELECT created_at, country, count, kind, reservation_id FROM quota.usage_records
       WHERE org_id = $1 AND ($2::text IS NULL OR country = $2)
       ORDER BY created_at DESC, id DESC LIMIT $3`,
      [orgId, country ?? null, limit],
    );
    return r.rows.map((row) => ({
      time: row.created_at,
      country: row.country,
      count: row.count,
      kind: row.kind,
      reservationId: row.reservation_id,
    }));
  }
}
