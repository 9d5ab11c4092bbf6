import type { Pool } from '@dnc/kit';

/** Operator maintenance windows per country (table admission.maintenance_windows). */
export class MaintenanceStore {
  constructor(private readonly pool: Pool) {}

  async setMaintenance(country: string, until: Date): Promise<void> {
    await this.pool.query(
      `INSERT INTO admission.maintenance_windows (country, until) VALUES ($1, $2)
       ON CONFLICT (country) DO UPDATE SET until = EXCLUDED.until, set_at = now()`,
      [country, until],
    );
  }

  async clearMaintenance(country: string): Promise<void> {
    await this.pool.query('DELETE FROM admission.maintenance_windows WHERE country = $1', [country]);
  }

  async maintenanceWindows(): Promise<Map<string, Date>> {
    const r = await this.pool.query('SELECT country, until FROM admission.maintenance_windows');
    return new Map(r.rows.map((row) => [row.country as string, row.until as Date]));
  }

  async maintenanceUntil(country: string): Promise<Date | undefined> {
    const r = await this.pool.query('SELECT until FROM admission.maintenance_windows WHERE country = $1', [
      country,
    ]);
    return r.rows[0]?.until;
  }
}
