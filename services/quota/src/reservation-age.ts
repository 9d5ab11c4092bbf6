import { Gauge, type Registry } from '@dnc/kit';
import { quotav1 } from '@dnc/proto';
import type pg from 'pg';

const KINDS: ReadonlyMap<number, string> = new Map([
  [quotav1.UsageKind.SYNC, 'sync'],
  [quotav1.UsageKind.JOB, 'job'],
]);

/**
 * `dnc_quota_oldest_open_reservation_seconds{kind}`: age of the oldest reservation still open, read from the
 * ledger at scrape time (the partial index `reservations_open` answers it). A v1 reservation lives for one
 * request and is swept after its TTL; a job's lives until the job is terminal (24 h hard cap). One older than
 * that bound means quota held for nobody: alerts DncSyncReservationStale / DncJobReservationStale.
 */
export function reservationAgeGauge(pool: pg.Pool, registry: Registry): Gauge<'kind'> {
  return new Gauge({
    name: 'dnc_quota_oldest_open_reservation_seconds',
    help: 'Age of the oldest open quota reservation, by kind (sync = v1, job = v2); 0 when none is open.',
    labelNames: ['kind'],
    registers: [registry],
    async collect() {
      let r: pg.QueryResult<{ kind: number; age: string }>;
      try {
        r = await pool.query(
          `SELECT kind, extract(epoch FROM now() - min(created_at)) AS age
           FROM quota.reservations WHERE state = 'reserved' GROUP BY kind`,
        );
      } catch {
        return; // Postgres unreachable: keep the last values (readiness reports the outage).
      }
      const ages = new Map(r.rows.map((row) => [row.kind, Math.max(0, Number(row.age))]));
      for (const [kind, label] of KINDS) this.set({ kind: label }, ages.get(kind) ?? 0);
    },
  });
}
