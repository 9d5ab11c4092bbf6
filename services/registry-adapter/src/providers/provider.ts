/** Operational status as Describe and discovery report it. */
export type AdapterStatus = 'serving' | 'maintenance' | 'unavailable';

export interface ProviderState {
  status: AdapterStatus;
  maintenanceUntil?: Date;
  snapshotId: string;
  snapshotTime?: Date;
  registrySize: number;
}

/** Which registries a batch of keys is in, and the identity of the snapshot every answer came from. */
export interface LookupResult {
  snapshotId: string;
  /** When that snapshot was taken from the registry; for a remote registry, the time of its answer. */
  snapshotTime?: Date;
  /** 1 = registered (prohibited), 0 = not registered; one per key, same order. */
  registered: Uint8Array;
}

/**
 * Where the registry answers come from. Implementations: the local snapshot index (default), a
 * remote registry API client, and the drill wrapper around either. A provider fails with
 * ProviderError only; the Check handler turns that into the public reason and nothing else.
 */
export interface RegistryProvider {
  readonly kind: string;
  lookup(keys: Float64Array, signal: AbortSignal): Promise<LookupResult>;
  state(): ProviderState;
}

/** The public classes of provider failure; nothing else about a failure leaves the adapter. */
export type ProviderErrorClass = 'maintenance' | 'unavailable';

export class ProviderError extends Error {
  constructor(
    readonly errorClass: ProviderErrorClass,
    message: string,
    readonly retryAfterSeconds?: number,
    readonly maintenanceUntil?: Date,
  ) {
    super(message);
    this.name = 'ProviderError';
  }
}
