import type { KV, Logger } from '@dnc/kit';

/** How long a country's declared window is taken as read before it is read again. */
const READ_EVERY_MS = 2_000;
/**
 * How long one read may take before the last window read stands (a KV get is one NATS request, ~1 ms;
 * while NATS is away it waits for the connection's request timeout, seconds, on every adapter call).
 */
const READ_TIMEOUT_MS = 500;

/**
 * The maintenance windows an operator declared (`dnc-admin country maintenance`), as admission publishes
 * them in the KV bucket dnc_country_status: `{country, maintenance_until}` per country. Admission refuses
 * new requests of a country in maintenance; a job admitted before the window (it may wait 24 h) must not
 * run in it either (spec: known maintenance gives `country_service_maintenance`): a window is often
 * declared because the registry copy is known to be wrong. Found by a review (2026-12-03): the worker
 * knew only the maintenance an adapter reports itself, which a local registry copy never does.
 *
 * Read per country at most every 2 s, one read at a time whoever asks, each bounded by 500 ms. When the
 * bucket cannot be read (NATS away, or too slow), the last window read stands (none: no window), as the
 * adapters' own entries do during an outage, and it is tried again 2 s later, not on every call.
 */
export class DeclaredMaintenance {
  private readonly read = new Map<string, { until: number | undefined; at: number }>();
  private readonly reading = new Map<string, Promise<void>>();
  private failing = false;

  constructor(
    private readonly kv: Pick<KV, 'get'>,
    private readonly logger: Logger,
    private readonly now: () => number = Date.now,
    private readonly timeoutMs = READ_TIMEOUT_MS,
  ) {}

  /** When the country's declared window ends (epoch ms), while one is in force; else undefined. */
  async until(country: string): Promise<number | undefined> {
    const last = this.read.get(country);
    if (!last || this.now() - last.at >= READ_EVERY_MS) {
      let reading = this.reading.get(country);
      if (!reading) {
        reading = this.readOnce(country).finally(() => this.reading.delete(country));
        this.reading.set(country, reading);
      }
      await reading;
    }
    const until = this.read.get(country)?.until;
    return until !== undefined && until > this.now() ? until : undefined;
  }

  private async readOnce(country: string): Promise<void> {
    const at = this.now();
    let timer: NodeJS.Timeout | undefined;
    try {
      const entry = await Promise.race([
        this.kv.get(country),
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new Error('declared maintenance read timed out')), this.timeoutMs);
        }),
      ]);
      let until: number | undefined;
      if (entry && entry.operation === 'PUT') {
        const end = Date.parse(String((entry.json() as { maintenance_until?: unknown }).maintenance_until));
        until = Number.isFinite(end) ? end : undefined;
      }
      this.read.set(country, { until, at });
      this.failing = false;
    } catch (error) {
      if (!this.failing) this.logger.warn({ err: error }, 'declared maintenance windows not read');
      this.failing = true;
      // The last window stands until the next read, 2 s from now: not one timeout per adapter call.
      this.read.set(country, { until: this.read.get(country)?.until, at });
    } finally {
      clearTimeout(timer);
    }
  }
}
