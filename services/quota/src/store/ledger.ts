import { Code, ConnectError, inTransaction, type Pool, type PoolClient, publicError } from '@dnc/kit';
import { type ReservationState, transition } from '../domain/period.js';

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
  /** When it was committed. */
  time: Date;
  country: string;
  /** The month it counts against: its reservation's (`time` may be in the next one). */
  period: string;
  count: number;
  kind: number;
  reservationId: string;
}

export const QUOTA_EXCEEDED = 'customer_quota_exceeded';

/** What a reservation of a batch did; see `quota.reserve_many` in the migrations. */
export type ReserveOutcome = 'ok' | 'quota_exceeded' | 'id_conflict' | 'released';

/** What a commit of a batch did; see `quota.commit_many` in the migrations. */
export type CommitOutcome = 'committed' | 'not_found' | 'released';

interface ReservationRow {
  org_id: string;
  country: string;
  period: string;
  amount: number;
  kind: number;
  state: ReservationState;
}

/**
 * The quota period (`YYYY-MM`, the UTC calendar month) of the database's clock, in SQL: the same clock as
 * the time of every usage record and reservation (`periodOf` is its reading of a given instant).
 */
const CURRENT_PERIOD = `to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM')`;

/** SQLSTATE serialization_failure: reserve_many saw one of its ids written concurrently. */
const SERIALIZATION_FAILURE = '40001';
const ATTEMPTS = 5;

/**
 * The ledger. Reserve and commit are batches (a single call is a batch of one), each batch one call
 * of a PL/pgSQL function: one statement, one round trip, one transaction. The functions lock the
 * account rows of the batch in key order before they check and change them, so parallel
 * reservations are serialized per account and `used + reserved` can never pass the limit.
 */
export class Ledger {
  constructor(private readonly pool: Pool) {}

  /**
   * Reserve every input in order, each as `reserve` would; a later input sees the reservations of
   * earlier ones. One outcome per input, in the same order.
   */
  async reserveMany(inputs: readonly ReserveInput[]): Promise<ReserveOutcome[]> {
    if (inputs.length === 0) return [];
    const params = [
      inputs.map((i) => i.reservationId),
      inputs.map((i) => i.orgId),
      inputs.map((i) => i.country),
      inputs.map((i) => i.amount),
      inputs.map((i) => i.kind),
    ];
    for (let attempt = 1; ; attempt++) {
      try {
        const r = await this.pool.query<{ outcomes: ReserveOutcome[] }>({
          name: 'quota.reserve_many',
          // The month is the database's (CURRENT_PERIOD), as every usage record's time is: a replica's
          // clock a few seconds off at 00:00 UTC on the 1st would put a reservation in the other month.
          text: `SELECT quota.reserve_many($1::text[], $2::text[], $3::text[], $4::bigint[], $5::smallint[], ${CURRENT_PERIOD}) AS outcomes`,
          values: params,
        });
        return r.rows[0]!.outcomes;
      } catch (error) {
        // Another transaction wrote one of the ids meanwhile (a release's tombstone): read again.
        const code = (error as { code?: string }).code;
        if (code !== SERIALIZATION_FAILURE || attempt >= ATTEMPTS) throw error;
      }
    }
  }

  async reserve(input: ReserveInput): Promise<void> {
    const [outcome] = await this.reserveMany([input]);
    switch (outcome) {
      case 'ok':
        return; // reserved now, or the same reservation again: changes nothing
      case 'quota_exceeded':
        throw publicError(Code.ResourceExhausted, QUOTA_EXCEEDED, {
          message: 'The monthly quota of this country is used up; ask for a higher quota.',
          country: input.country,
        });
      case 'id_conflict':
        throw new ConnectError('reservation id already used for another reservation', Code.AlreadyExists);
      case 'released':
        throw new ConnectError('reservation already released', Code.FailedPrecondition);
      default:
        throw new Error(`unexpected reserve outcome ${String(outcome)}`);
    }
  }

  /**
   * Commit every id, each as `commit` would: one usage record per reservation, however often its id
   * is repeated. One outcome per id, in the same order.
   */
  async commitMany(reservationIds: readonly string[], lockTimeoutMs?: number): Promise<CommitOutcome[]> {
    if (reservationIds.length === 0) return [];
    if (lockTimeoutMs === undefined) {
      const r = await this.pool.query<{ outcomes: CommitOutcome[] }>({
        name: 'quota.commit_many',
        text: 'SELECT quota.commit_many($1::text[]) AS outcomes',
        values: [reservationIds],
      });
      return r.rows[0]!.outcomes;
    }
    // Every lock wait of the commit ends by the deadline: past it the commit fails and changes nothing.
    // The time spent waiting for a connection counts (found by a review, 2026-12-04: with every
    // connection held by a commit blocked on a lock, the next one got its whole budget again once it had
    // one and committed after its caller had stopped waiting).
    const deadline = performance.now() + lockTimeoutMs;
    const client = await this.pool.connect();
    let failed: Error | undefined;
    try {
      // Nothing left once connected: not sent (a commit without a lock to wait for runs in under 1 ms).
      const left = Math.ceil(deadline - performance.now());
      if (left <= 0)
        throw new ConnectError('the commit waited for a connection past its deadline', Code.DeadlineExceeded);
      const r = await client.query<{ outcomes: CommitOutcome[] }>({
        name: 'quota.commit_many_within',
        text: 'SELECT quota.commit_many($1::text[], $2::integer) AS outcomes',
        values: [reservationIds, left],
      });
      return r.rows[0]!.outcomes;
    } catch (error) {
      if (!(error instanceof ConnectError))
        failed = error instanceof Error ? error : new Error(String(error));
      throw error;
    } finally {
      // As pool.query does: a connection whose query failed is not reused.
      client.release(failed);
    }
  }

  /**
   * Turn a reservation into usage: one usage record, exactly once. `lockTimeoutMs` bounds its lock waits
   * as for `commitMany`.
   */
  async commit(reservationId: string, lockTimeoutMs?: number): Promise<void> {
    const [outcome] = await this.commitMany([reservationId], lockTimeoutMs);
    switch (outcome) {
      case 'committed':
        return;
      case 'not_found':
        throw new ConnectError('unknown reservation', Code.NotFound);
      case 'released':
        throw new ConnectError('reservation already released', Code.FailedPrecondition);
      default:
        throw new Error(`unexpected commit outcome ${String(outcome)}`);
    }
  }

  /**
   * Free a reservation. Releasing twice or after commit changes nothing. Releasing an id never
   * reserved leaves a released tombstone, so a late Reserve of that id cannot take quota afterwards.
   *
   * A reserve of the id may be in flight when the release reads nothing (its caller gave up waiting
   * for it): the tombstone's insert then waits on that reserve's row. When the reserve commits, the
   * tombstone is not written, and the reservation it made is read again and released like any other.
   *
   * `lockTimeoutMs` bounds the release as a whole, its wait for a connection and each statement that can
   * wait on a lock in turn (what is left is set before each): past it the release fails and changes
   * nothing; its caller, who stopped waiting, tries again.
   */
  async release(reservationId: string, lockTimeoutMs?: number): Promise<{ committed: boolean }> {
    const deadline = lockTimeoutMs === undefined ? undefined : performance.now() + lockTimeoutMs;
    return inTransaction(this.pool, async (tx) => {
      const waits = async () => {
        if (deadline === undefined) return;
        const left = Math.ceil(deadline - performance.now());
        if (left <= 0) throw new ConnectError('the release ran past its deadline', Code.DeadlineExceeded);
        // A statement can wait on two locks in turn (a row's tuple lock behind another waiter, then its
        // holder's transaction), each bounded by lock_timeout on its own: statement_timeout bounds both.
        await tx.query(
          "SELECT set_config('lock_timeout', $1, true), set_config('statement_timeout', $1, true)",
          [`${left}ms`],
        );
      };
      let r = await this.lockReservation(tx, reservationId, waits);
      if (!r) {
        await waits();
        const tombstone = await tx.query(
          `INSERT INTO quota.reservations (reservation_id, org_id, country, period, amount, kind, state)
           VALUES ($1, '', '', '', 0, 0, 'released') ON CONFLICT DO NOTHING`,
          [reservationId],
        );
        if (tombstone.rowCount === 1) return { committed: false };
        // Read committed: this statement sees the row that the insert waited for.
        r = await this.lockReservation(tx, reservationId, waits);
        if (!r) throw new Error('a reservation in conflict with its tombstone could not be read');
      }
      if (transition(r.state, 'release') !== 'apply') return { committed: r.state === 'committed' };
      // As commit_many: nothing is written once the deadline has passed, whatever the waits took.
      await waits();
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

  /** `waits` runs before each statement that can wait on a lock (the release's deadline). */
  private async lockReservation(
    tx: PoolClient,
    id: string,
    waits: () => Promise<void>,
  ): Promise<ReservationRow | undefined> {
    // Lock the account before the reservation (the order of reserve_many and commit_many) so they
    // never deadlock.
    const peek = await tx.query<ReservationRow>(
      'SELECT org_id, country, period FROM quota.reservations WHERE reservation_id = $1',
      [id],
    );
    const p = peek.rows[0];
    if (!p) return undefined;
    await waits();
    await tx.query(
      'SELECT 1 FROM quota.accounts WHERE org_id = $1 AND country = $2 AND period = $3 FOR UPDATE',
      [p.org_id, p.country, p.period],
    );
    await waits();
    const r = await tx.query<ReservationRow>(
      `SELECT org_id, country, period, amount, kind, state FROM quota.reservations
       WHERE reservation_id = $1 FOR UPDATE`,
      [id],
    );
    return r.rows[0];
  }

  /**
   * Open reservations of `kind` older than `olderThanSeconds` (left behind by a crashed caller), the
   * oldest first, but those of `except`.
   */
  async staleReservations(
    kind: number,
    olderThanSeconds: number,
    limit = 100,
    except: readonly string[] = [],
  ): Promise<string[]> {
    const r = await this.pool.query<{ reservation_id: string }>(
      `SELECT reservation_id FROM quota.reservations
       WHERE state = 'reserved' AND kind = $1 AND created_at < now() - make_interval(secs => $2)
         AND reservation_id <> ALL($4::text[])
       ORDER BY created_at LIMIT $3`,
      [kind, olderThanSeconds, limit, except],
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
    const r = await this.pool.query<{
      country: string;
      period: string;
      monthly_limit: number;
      used: number | null;
      reserved: number | null;
    }>(
      `SELECT l.country, p.period, l.monthly_limit, a.used, a.reserved
       FROM (SELECT ${CURRENT_PERIOD} AS period) p
       CROSS JOIN quota.limits l
       LEFT JOIN quota.accounts a ON a.org_id = l.org_id AND a.country = l.country AND a.period = p.period
       WHERE l.org_id = $1 ORDER BY l.country`,
      [orgId],
    );
    return r.rows.map((row) => ({
      orgId,
      country: row.country,
      period: row.period,
      limit: row.monthly_limit,
      used: row.used ?? 0,
      reserved: row.reserved ?? 0,
    }));
  }

  async usage(orgId: string, country: string | undefined, limit = 1000): Promise<Usage[]> {
    const r = await this.pool.query<{
      created_at: Date;
      country: string;
      period: string;
      count: number;
      kind: number;
      reservation_id: string;
    }>(
      `SELECT created_at, country, period, count, kind, reservation_id FROM quota.usage_records
       WHERE org_id = $1 AND ($2::text IS NULL OR country = $2)
       ORDER BY created_at DESC, id DESC LIMIT $3`,
      [orgId, country ?? null, limit],
    );
    return r.rows.map((row) => ({
      time: row.created_at,
      country: row.country,
      period: row.period,
      count: row.count,
      kind: row.kind,
      reservationId: row.reservation_id,
    }));
  }
}
