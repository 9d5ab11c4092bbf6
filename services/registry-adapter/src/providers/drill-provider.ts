import { Code, ConnectError } from '@dnc/kit';
import { type LookupResult, ProviderError, type ProviderState, type RegistryProvider } from './provider.js';

export type DrillFailure = 'none' | 'unavailable' | 'maintenance';

export interface Drill {
  latencyMs: number;
  failure: DrillFailure;
}

export const NO_DRILL: Drill = { latencyMs: 0, failure: 'none' };

/**
 * Operator drills for game days and end-to-end tests (only with DNC_ENABLE_DRILLS=1): add latency to
 * every Check, or make the country's registry fail as unavailable or in maintenance. Wraps any provider.
 */
export class DrillProvider implements RegistryProvider {
  private drill: Drill = NO_DRILL;

  constructor(private readonly inner: RegistryProvider) {}

  get kind(): string {
    return this.inner.kind;
  }

  get current(): Drill {
    return this.drill;
  }

  set(drill: Drill): void {
    this.drill = { ...drill };
  }

  async lookup(keys: Float64Array, signal: AbortSignal): Promise<LookupResult> {
    const drill = this.drill;
    if (drill.latencyMs > 0) await sleep(drill.latencyMs, signal);
    if (drill.failure === 'maintenance') throw new ProviderError('maintenance', 'drill: maintenance', 60);
    if (drill.failure === 'unavailable') throw new ProviderError('unavailable', 'drill: unavailable', 5);
    return this.inner.lookup(keys, signal);
  }

  state(): ProviderState {
    const state = this.inner.state();
    if (this.drill.failure === 'maintenance') return { ...state, status: 'maintenance' };
    if (this.drill.failure === 'unavailable') return { ...state, status: 'unavailable' };
    return state;
  }
}

/** Wait, but give up as soon as the caller's deadline passes or it cancels. */
function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(aborted(signal));
    const t = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(t);
      reject(aborted(signal));
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

function aborted(signal: AbortSignal): ConnectError {
  return ConnectError.from(signal.reason ?? new ConnectError('cancelled', Code.Canceled));
}
