import type { KV, Logger } from '@dnc/kit';

/** One write to the bucket may take this long (a NATS request, ~1 ms; the admin call's budget is 10 s). */
const WRITE_TIMEOUT_MS = 2_000;
/** Writes of one publish refused because another writer wrote the key in between, before giving up. */
const ATTEMPTS = 3;

/** JetStream's `err_code` of a write whose expected last revision of the key is not the key's. */
const WRONG_LAST_SEQUENCE = 10071;

/**
 * The key's current revision, as the refusal of a conditional write names it (`wrong last sequence: N`);
 * undefined for any other failure.
 */
function revisionOfRefusal(error: unknown): number | undefined {
  const e = error as { code?: unknown; message?: unknown } | undefined;
  if (e?.code !== WRONG_LAST_SEQUENCE || typeof e.message !== 'string') return undefined;
  const m = /wrong last sequence: (\d+)/.exec(e.message);
  return m ? Number(m[1]) : undefined;
}

export interface CountryStatusDeps {
  /** KV dnc_country_status, written only (admission's NATS user may not read it). */
  kv: Pick<KV, 'put'>;
  /** The country's maintenance window as PostgreSQL has it now (admission.maintenance_windows). */
  read: (country: string) => Promise<Date | undefined>;
  countries: readonly string[];
  logger: Logger;
}

/**
 * Publishes each country's maintenance window from PostgreSQL to KV dnc_country_status, the only
 * place the v2 workers learn of it (job-scheduler DeclaredMaintenance): after each SetMaintenance and
 * ClearMaintenance (which answer an error unless it was published), and every country again every
 * DNC_COUNTRY_STATUS_REPUBLISH_MS, so a publish lost to a NATS outage, a crash between the commit and the
 * publish, or a late write of an older status is put right within one interval. Several replicas run it.
 *
 * Newer is never undone by older: every write is conditional on the key's revision (JetStream's
 * expected last subject sequence), and that revision was seen BEFORE PostgreSQL was read. A write lands
 * only if nobody wrote the key since the revision was seen, hence since the read; a status written in
 * between (an operator's change committed after this read and published) refuses this write instead.
 * The refusal names the key's revision: PostgreSQL is read again and the write repeated. A write that
 * timed out but lands later is bound by the same condition. The revision seen last (this process's own
 * writes and refusals) is kept per country; none: 0, "no entry", refused and learned when one exists.
 * No read of the bucket is needed, and the entry stays `{country, maintenance_until}` as before.
 */
export class CountryStatusPublisher {
  private readonly revisions = new Map<string, number>();
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<string[]> | undefined;
  private stopped = false;

  constructor(
    private readonly deps: CountryStatusDeps,
    private readonly intervalMs: number,
  ) {}

  /** Writes the country's status as PostgreSQL has it now; rejects unless it reached the bucket. */
  async publish(country: string): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      // Seen before the read below: the condition that makes a write of what it read safe.
      const expected = this.revisions.get(country) ?? 0;
      const until = await this.deps.read(country);
      const entry = JSON.stringify({ country, maintenance_until: until?.toISOString() ?? null });
      try {
        const revision = await this.deps.kv.put(country, entry, {
          previousSeq: expected,
          timeout: WRITE_TIMEOUT_MS,
        });
        this.revisions.set(country, revision);
        return;
      } catch (error) {
        const current = revisionOfRefusal(error);
        if (current === undefined || attempt >= ATTEMPTS) throw error;
        this.revisions.set(country, current);
      }
    }
  }

  start(): void {
    void this.republishOnce();
    this.timer = setInterval(() => void this.republishOnce(), this.intervalMs);
    this.timer.unref();
  }

  /**
   * Ends the republishing: a pass in progress stops after its write in progress. Found by a review
   * (2026-12-05): with NATS unreachable each write waits WRITE_TIMEOUT_MS, and a shutdown waited for
   * the whole pass (six countries, ~12 s of the termination grace). What it did not write, the other
   * replicas and the next start write.
   */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    await this.running;
  }

  /** Every country's status from PostgreSQL to the bucket; the countries that failed (next interval). */
  republishOnce(): Promise<string[]> {
    if (this.running) return this.running;
    this.running = this.pass().finally(() => {
      this.running = undefined;
    });
    return this.running;
  }

  private async pass(): Promise<string[]> {
    const failed: string[] = [];
    let last: unknown;
    for (const country of this.deps.countries) {
      if (this.stopped) break;
      try {
        await this.publish(country);
      } catch (error) {
        // Refused every time: other replicas wrote it meanwhile, each what it read after its revision.
        if (revisionOfRefusal(error) !== undefined) continue;
        failed.push(country);
        last = error;
      }
    }
    if (failed.length > 0)
      this.deps.logger.warn(
        { err: last, countries: failed },
        'country status not republished to the workers; retrying next interval',
      );
    return failed;
  }
}
