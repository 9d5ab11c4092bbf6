import type { KV, KvEntry } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/transport-node';
import type { Logger } from 'pino';
import type { EntrySignature } from './security/discovery-signature.js';

/**
 * One registry adapter instance as it announces itself in the `dnc_adapters` bucket, under the key
 * `<country>.<instance_id>`. The adapter rewrites its entry every few seconds; an entry older than
 * STALE_AFTER_MS is treated as gone (an expired KV entry leaves no delete marker on older servers).
 */
export interface AdapterEntry {
  country: string;
  instance_id: string;
  /** The data-plane listener (Check, Describe), `host:port` with or without a scheme. */
  address: string;
  /** The admin listener (Load, status, drills): operator only. */
  admin_address?: string;
  version: string;
  status: 'serving' | 'maintenance' | 'unavailable';
  maintenance_until?: string;
  snapshot_id: string;
  snapshot_time?: string;
  registry_size: number;
  /**
   * Present when this adapter's Check answers an input invalid exactly when these numbering rules
   * (`NUMBERING_RULES` of @dnc/numbering) do, with their reason, and never rejects a valid number
   * (OUTCOME_INVALID_REGISTRY_REJECTED). Only then may a v2 job's result be bounded by validating its
   * inputs with the same rules (admission checks it); without it, every input counts at its worst.
   */
  numbering_rules?: string;
  /**
   * Where its Check looks numbers up: `local`, its own copy of the registry (a lookup costs nothing
   * beyond the call), or `remote`, the registry's API (which may bill every lookup). Absent (an older
   * adapter): taken as `remote`.
   */
  provider?: 'local' | 'remote';
  /** ISO timestamp of the last refresh. */
  updated_at: string;
  /** The adapter's signature over every other field (security/discovery-signature.ts). */
  signature?: EntrySignature;
}

/** Decides whether an entry may be used (its signature); entries it refuses are never offered. */
export type EntryCheck = (key: string, entry: AdapterEntry) => boolean;

export const ADAPTER_HEARTBEAT_MS = 2_000;
export const STALE_AFTER_MS = 6_000;
/**
 * While NATS is unreachable no adapter can refresh its entry, yet the adapters themselves (and v1,
 * which needs no NATS) may be fine: the entries that were fresh when the connection was lost stay
 * offered for this long, and for STALE_AFTER_MS after it is back (the adapters' next heartbeats).
 * A dead adapter among them answers its calls with a connection error, which the callers already
 * treat as the country being unavailable.
 */
export const OUTAGE_GRACE_MS = 120_000;
/**
 * How far ahead of the NATS server's time of a write (the KV entry's `created`) an entry's own
 * `updated_at` may count. An adapter signs its clock's time; one running ahead (or a compromised one
 * that dates its last "serving" an hour ahead, then dies) would otherwise stay fresh for that long, and
 * a KV entry's expiry is not seen by a watch. Clocks within this of the server's change nothing.
 */
export const ENTRY_CLOCK_SKEW_MS = 5_000;
/**
 * A live write dated further behind than this is not fresh on the reader's clock (only on its own
 * date, so it is stale at once): it is an old signed entry written again (a replay by someone holding
 * the adapter's NATS credentials: `serving` during maintenance, an old version or rules), not the
 * heartbeat of an adapter whose clock runs a few seconds behind. Found by a review (2026-12-03).
 */
export const REPLAYED_AFTER_MS = 60_000;
/** The watch is started again after an error, waiting 0.5 s doubling to 10 s between tries. */
export const WATCH_RETRY_MIN_MS = 500;
export const WATCH_RETRY_MAX_MS = 10_000;
/**
 * Adapters rewrite their entries every ADAPTER_HEARTBEAT_MS: a watch silent for this long while NATS
 * is connected is presumed broken (its stream deleted and made again, a consumer lost) and reopened.
 */
export const WATCH_SILENCE_MS = 5 * ADAPTER_HEARTBEAT_MS;

export function adapterKey(country: string, instanceId: string): string {
  return `${country}.${instanceId}`;
}

export async function announceAdapter(kv: KV, entry: AdapterEntry): Promise<void> {
  await kv.put(adapterKey(entry.country, entry.instance_id), JSON.stringify(entry));
}

export async function withdrawAdapter(kv: KV, country: string, instanceId: string): Promise<void> {
  await kv.delete(adapterKey(country, instanceId));
}

/**
 * A live view of the adapters, kept current by a KV watch. Callers notice within seconds when an
 * adapter goes away (entry deleted or stale) or comes back.
 */
type Watch = Awaited<ReturnType<KV['watch']>>;

export class AdapterDirectory {
  private readonly entries = new Map<string, AdapterEntry>();
  /** When each entry was last refreshed, as its freshness is judged (`updated_at`, bounded by the server's time). */
  private readonly refreshedAt = new Map<string, number>();
  private stopped = false;
  private cursor = 0;

  constructor(
    private readonly kv: KV,
    private readonly logger: Logger,
    private readonly accept: EntryCheck = () => true,
  ) {}

  /** The first watch is opened here (a startup failure is the caller's); later ones by `follow`. */
  async start(): Promise<void> {
    const watch = await this.kv.watch({ key: '>' });
    void this.follow(watch);
  }

  private stopWatch: () => void = () => {};
  private wake: () => void = () => {};
  /** When the connection to NATS was lost (undefined: connected) and when it came back. */
  private outageSince: number | undefined;
  private outageEnded = 0;
  private outageStarted = 0;

  /**
   * The long-lived watch loop: an error or an end of the watch (its stream deleted, a server gone)
   * is logged and the watch opened again with backoff; it never rejects.
   */
  private async follow(first: Watch | undefined): Promise<void> {
    let watch = first;
    let failures = 0;
    while (!this.stopped) {
      try {
        watch ??= await this.kv.watch({ key: '>' });
        const current = watch;
        this.stopWatch = () => current.stop();
        let lastEvent = Date.now();
        const watchdog = setInterval(() => {
          if (this.outageSince === undefined && Date.now() - lastEvent > WATCH_SILENCE_MS) current.stop();
        }, ADAPTER_HEARTBEAT_MS);
        try {
          // A watch first replays the last write of every key (of any age); a key's later deliveries
          // are writes made while this watch ran.
          const seen = new Set<string>();
          for await (const e of current) {
            if (this.stopped) return;
            lastEvent = Date.now();
            this.apply(e, seen.has(e.key) ? lastEvent : undefined);
            seen.add(e.key);
            failures = 0;
          }
        } finally {
          clearInterval(watchdog);
        }
        if (this.stopped) return;
        this.logger.warn('adapter watch ended or went silent; watching again');
      } catch (error) {
        if (this.stopped) return;
        this.logger.warn({ err: error }, 'adapter watch failed; watching again');
      }
      watch?.stop();
      watch = undefined;
      failures++;
      const delay = Math.min(WATCH_RETRY_MAX_MS, WATCH_RETRY_MIN_MS * 2 ** (failures - 1));
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, delay);
        this.wake = () => {
          clearTimeout(t);
          resolve();
        };
      });
    }
  }

  /**
   * `receivedLive`: when this process received the write, if the watch saw it as it was made (not in its
   * replay). Freshness is judged on the writer's clock (`updated_at`, bounded by the server's time of the
   * write), and a live write is fresh on this process's clock as well: an adapter whose clock runs
   * behind this process's (or the server's) by more than a few seconds looked stale on every heartbeat,
   * and its country unavailable here (a 503 for every v1 request, a failed job), found by a review of
   * the clocks each decision uses (2026-12-03). A dead adapter writes nothing live, so it still goes
   * stale STALE_AFTER_MS after its last write.
   */
  private apply(e: KvEntry, receivedLive: number | undefined): void {
    if (e.operation === 'DEL' || e.operation === 'PURGE') {
      this.entries.delete(e.key);
      this.refreshedAt.delete(e.key);
      return;
    }
    try {
      const entry = JSON.parse(e.string()) as AdapterEntry;
      // A refused write leaves the last verified entry in place (it goes stale on its own).
      if (this.accept(e.key, entry)) {
        this.entries.set(e.key, entry);
        const written = e.created.getTime() + ENTRY_CLOCK_SKEW_MS;
        const byWriter = Math.min(Date.parse(entry.updated_at), written);
        const live = receivedLive !== undefined && receivedLive - byWriter <= REPLAYED_AFTER_MS;
        this.refreshedAt.set(e.key, live ? Math.max(byWriter, receivedLive) : byWriter);
      }
    } catch {
      this.logger.warn('ignored a malformed adapter entry');
    }
  }

  /**
   * Follow the connection's status: while it is down (and shortly after), the entries known good
   * when it went down stay offered (OUTAGE_GRACE_MS).
   */
  followConnection(nc: NatsConnection): void {
    void (async () => {
      for await (const s of nc.status()) {
        if (this.stopped) return;
        if (s.type === 'disconnect' && this.outageSince === undefined) {
          this.outageSince = Date.now();
          this.outageStarted = this.outageSince;
        } else if (s.type === 'reconnect' && this.outageSince !== undefined) {
          this.outageSince = undefined;
          this.outageEnded = Date.now();
          // Entries refreshed from now on: watch again at once rather than after a backoff.
          this.wake();
        }
      }
    })().catch(() => {});
  }

  stop(): void {
    this.stopped = true;
    this.stopWatch();
    this.wake();
  }

  /** Fresh entries of a country (any status). */
  instances(country: string, now = Date.now()): AdapterEntry[] {
    const out: AdapterEntry[] = [];
    const asOf = this.freshAsOf(now);
    for (const [key, entry] of this.entries) {
      const refreshed = this.refreshedAt.get(key) ?? Date.parse(entry.updated_at);
      if (entry.country === country && asOf - refreshed <= STALE_AFTER_MS) out.push(entry);
    }
    return out;
  }

  /** The time freshness is judged at: now, or the start of a NATS outage still within its grace. */
  private freshAsOf(now: number): number {
    const inOutage = this.outageSince !== undefined && now - this.outageSince <= OUTAGE_GRACE_MS;
    const justBack =
      this.outageSince === undefined &&
      this.outageEnded > 0 &&
      now - this.outageEnded <= STALE_AFTER_MS &&
      this.outageEnded - this.outageStarted <= OUTAGE_GRACE_MS;
    return inOutage ? (this.outageSince as number) : justBack ? this.outageStarted : now;
  }

  /** A serving adapter of the country, round-robin across instances; undefined when none serves. */
  pick(country: string): AdapterEntry | undefined {
    const serving = this.instances(country).filter((e) => e.status === 'serving');
    if (serving.length === 0) return undefined;
    serving.sort((a, b) => a.instance_id.localeCompare(b.instance_id));
    this.cursor = (this.cursor + 1) % 1_000_000;
    return serving[this.cursor % serving.length];
  }
}
