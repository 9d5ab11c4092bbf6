import {
  type AdapterEntry,
  adapterKey,
  announceAdapter,
  type KV,
  type Security,
  signAdapterEntry,
  withdrawAdapter,
} from '@dnc/kit';
import type { Logger } from 'pino';
import type { ProviderState } from './providers/provider.js';

/**
 * Keeps this instance's entry in the `dnc_adapters` bucket fresh (every heartbeat, and at once when
 * the status or snapshot changes), so callers pick it up, and notice within seconds when it goes away.
 */
export class AdapterAnnouncer {
  private timer: NodeJS.Timeout | undefined;
  private last = '';
  private failing = false;

  constructor(
    private readonly kv: KV,
    private readonly identity: {
      country: string;
      instanceId: string;
      address: string;
      /** The admin listener (Load, status, drills), for dnc-admin. */
      adminAddress?: string;
      version: string;
      /** The numbering rules its Check answers invalid by (see AdapterEntry.numbering_rules). */
      numberingRules?: string;
      /** Where its Check looks numbers up (AdapterEntry.provider). */
      provider?: 'local' | 'remote';
    },
    private readonly state: () => ProviderState,
    private readonly heartbeatMs: number,
    private readonly logger: Logger,
    /** Signs every announcement with this adapter's certificate key; callers check it before use. */
    private readonly security?: Security,
  ) {}

  get key(): string {
    return adapterKey(this.identity.country, this.identity.instanceId);
  }

  entry(): AdapterEntry {
    const s = this.state();
    return {
      country: this.identity.country,
      instance_id: this.identity.instanceId,
      address: this.identity.address,
      ...(this.identity.adminAddress ? { admin_address: this.identity.adminAddress } : {}),
      version: this.identity.version,
      status: s.status,
      ...(s.maintenanceUntil ? { maintenance_until: s.maintenanceUntil.toISOString() } : {}),
      snapshot_id: s.snapshotId,
      ...(s.snapshotTime ? { snapshot_time: s.snapshotTime.toISOString() } : {}),
      registry_size: s.registrySize,
      ...(this.identity.numberingRules ? { numbering_rules: this.identity.numberingRules } : {}),
      ...(this.identity.provider ? { provider: this.identity.provider } : {}),
      updated_at: new Date().toISOString(),
    };
  }

  async start(): Promise<void> {
    await this.announce();
    // A quick tick notices a status change within ~250 ms; the entry is rewritten at least every heartbeat.
    let lastWrite = Date.now();
    this.timer = setInterval(
      () => {
        const e = this.entry();
        const signature = `${e.status}|${e.snapshot_id}|${e.maintenance_until ?? ''}`;
        if (signature !== this.last || Date.now() - lastWrite >= this.heartbeatMs) {
          lastWrite = Date.now();
          void this.announce();
        }
      },
      Math.min(250, this.heartbeatMs),
    );
    this.timer.unref();
  }

  private async announce(): Promise<void> {
    const e = this.entry();
    this.last = `${e.status}|${e.snapshot_id}|${e.maintenance_until ?? ''}`;
    try {
      await announceAdapter(this.kv, this.security ? signAdapterEntry(this.security, e) : e);
      if (this.failing) this.logger.info('discovery entry refreshed again');
      this.failing = false;
    } catch (error) {
      if (!this.failing) this.logger.warn({ err: error }, 'discovery entry refresh failed');
      this.failing = true;
    }
  }

  /** Remove the entry (graceful shutdown): callers stop choosing this instance at once. */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    await withdrawAdapter(this.kv, this.identity.country, this.identity.instanceId).catch(() => {});
  }
}
