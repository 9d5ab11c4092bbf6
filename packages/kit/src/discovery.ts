import type { KV } from '@nats-io/kv';
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
  /** ISO timestamp of the last refresh. */
  updated_at: string;
  /** The adapter's signature over every other field (security/discovery-signature.ts). */
  signature?: EntrySignature;
}

/** Decides whether an entry may be used (its signature); entries it refuses are never offered. */
export type EntryCheck = (key: string, entry: AdapterEntry) => boolean;

export const ADAPTER_HEARTBEAT_MS = 2_000;
export const STALE_AFTER_MS = 6_000;

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
export class AdapterDirectory {
  private readonly entries = new Map<string, AdapterEntry>();
  private stopped = false;
  private cursor = 0;

  constructor(
    private readonly kv: KV,
    private readonly logger: Logger,
    private readonly accept: EntryCheck = () => true,
  ) {}

  async start(): Promise<void> {
    const watch = await this.kv.watch({ key: '>' });
    void (async () => {
      for await (const e of watch) {
        if (this.stopped) break;
        if (e.operation === 'DEL' || e.operation === 'PURGE') {
          this.entries.delete(e.key);
          continue;
        }
        try {
          const entry = JSON.parse(e.string()) as AdapterEntry;
          // A refused write leaves the last verified entry in place (it goes stale on its own).
          if (this.accept(e.key, entry)) this.entries.set(e.key, entry);
        } catch {
          this.logger.warn('ignored a malformed adapter entry');
        }
      }
    })();
    this.stopWatch = () => watch.stop();
  }

  private stopWatch: () => void = () => {};

  stop(): void {
    this.stopped = true;
    this.stopWatch();
  }

  /** Fresh entries of a country (any status). */
  instances(country: string, now = Date.now()): AdapterEntry[] {
    const out: AdapterEntry[] = [];
    for (const entry of this.entries.values()) {
      if (entry.country === country && now - Date.parse(entry.updated_at) <= STALE_AFTER_MS) out.push(entry);
    }
    return out;
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
