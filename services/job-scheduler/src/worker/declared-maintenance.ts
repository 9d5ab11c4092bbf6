import type { KV, Logger } from '@dnc/kit';

/** How long a country's declared window is taken as read before it is read again. */
const READ_EVERY_MS = 2_000;

/**
 * The maintenance windows an operator declared (`dnc-admin country maintenance`), as admission publishes
 * them in the KV bucket dnc_country_status: `{country, maintenance_until}` per country. Admission refuses
 * new requests of a country in maintenance; a job admitted before the window (it may wait 24 h) must not
 * run in it either (spec: known maintenance gives `country_service_maintenance`): a window is often
 * declared because the registry copy is known to be wrong. Found by a review (2026-12-03): the worker
 * knew only the maintenance an adapter reports itself, which a local registry copy never does.
 *
 * Read per country at most every 2 s. When the bucket cannot be read (NATS away), the last window read
 * stands (none: no window), as the adapters' own entries do during an outage.
 */
export class DeclaredMaintenance {
  private readonly read = new Map<string, { until: number | undefined; at: number }>();
  private failing = false;

  constructor(
    private readonly kv: Pick<KV, 'get'>,
    private readonly logger: Logger,
    private readonly now: () => number = Date.now,
  ) {}

  /** When the country's declared window ends (epoch ms), while one is in force; else undefined. */
  async until(country: string): Promise<number | undefined> {
    const now = this.now();
    const last = this.read.get(country);
    if (!last || now - last.at >= READ_EVERY_MS) {
      try {
        const entry = await this.kv.get(country);
        let until: number | undefined;
        if (entry && entry.operation === 'PUT') {
          const at = Date.parse(String((entry.json() as { maintenance_until?: unknown }).maintenance_until));
          until = Number.isFinite(at) ? at : undefined;
        }
        this.read.set(country, { until, at: now });
        this.failing = false;
      } catch (error) {
        if (!this.failing) this.logger.warn({ err: error }, 'declared maintenance windows not read');
        this.failing = true;
      }
    }
    const until = this.read.get(country)?.until;
    return until !== undefined && until > now ? until : undefined;
  }
}
