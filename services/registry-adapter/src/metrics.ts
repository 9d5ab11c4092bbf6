import { Counter, Gauge, Histogram, LATENCY_BUCKETS, type Registry } from '@dnc/kit';
import { registryv1 } from '@dnc/proto';
import type { ProviderState } from './providers/provider.js';

const OUTCOME_LABEL: Record<number, string> = {
  [registryv1.Outcome.SAFE]: 'safe',
  [registryv1.Outcome.PROHIBITED]: 'prohibited',
  [registryv1.Outcome.INVALID_UNPARSEABLE]: 'invalid_unparseable',
  [registryv1.Outcome.INVALID_LENGTH]: 'invalid_length',
  [registryv1.Outcome.INVALID_NUMBER]: 'invalid_number',
  [registryv1.Outcome.INVALID_WRONG_COUNTRY]: 'invalid_wrong_country',
  [registryv1.Outcome.INVALID_OBSOLETE_FORMAT]: 'invalid_obsolete_format',
  [registryv1.Outcome.INVALID_REGISTRY_REJECTED]: 'invalid_registry_rejected',
};

/** The adapter's metrics (names fixed by the dashboards and alerts). No label ever holds a number. */
export class AdapterMetrics {
  readonly checkDuration: Histogram<'country'>;
  readonly outcomes: Counter<'country' | 'outcome'>;
  readonly providerErrors: Counter<'country' | 'class'>;

  constructor(
    registry: Registry,
    readonly country: string,
    state: () => ProviderState,
    maxAgeSeconds = 0,
    rulesMismatch: () => boolean = () => false,
  ) {
    this.checkDuration = new Histogram({
      name: 'dnc_adapter_check_duration_seconds',
      help: 'Check handling time, validation and lookup of the whole batch.',
      labelNames: ['country'],
      buckets: LATENCY_BUCKETS,
      registers: [registry],
    });
    this.outcomes = new Counter({
      name: 'dnc_adapter_outcomes_total',
      help: 'Check outcomes by class.',
      labelNames: ['country', 'outcome'],
      registers: [registry],
    });
    this.providerErrors = new Counter({
      name: 'dnc_adapter_provider_errors_total',
      help: 'Failed registry lookups by public class (maintenance, unavailable).',
      labelNames: ['country', 'class'],
      registers: [registry],
    });
    new Gauge({
      name: 'dnc_registry_size',
      help: 'Numbers in the registry snapshot this replica serves.',
      labelNames: ['country'],
      registers: [registry],
      collect() {
        this.set({ country }, state().registrySize);
      },
    });
    new Gauge({
      name: 'dnc_registry_snapshot_timestamp_seconds',
      help: 'Commit time of the registry snapshot this replica serves (0 when none).',
      labelNames: ['country'],
      registers: [registry],
      collect() {
        const t = state().snapshotTime;
        this.set({ country }, t ? t.getTime() / 1000 : 0);
      },
    });
    new Gauge({
      name: 'dnc_registry_snapshot_rules_mismatch',
      help: 'Whether the current registry snapshot was built with other numbering rules than this replica applies (1: not served).',
      labelNames: ['country'],
      registers: [registry],
      collect() {
        this.set({ country }, rulesMismatch() ? 1 : 0);
      },
    });
    if (maxAgeSeconds > 0) {
      new Gauge({
        name: 'dnc_registry_max_age_seconds',
        help: 'Oldest registry snapshot this adapter answers from; past it the country is not served.',
        labelNames: ['country'],
        registers: [registry],
        collect() {
          this.set({ country }, maxAgeSeconds);
        },
      });
    }
  }

  /** Count one answer's outcomes (a histogram of 9 classes, not one increment per input). */
  countOutcomes(outcomes: ArrayLike<number>): void {
    const counts = new Uint32Array(16);
    for (let i = 0; i < outcomes.length; i++) counts[outcomes[i] as number]!++;
    for (let o = 1; o < counts.length; o++) {
      const n = counts[o] as number;
      if (n > 0) this.outcomes.inc({ country: this.country, outcome: OUTCOME_LABEL[o] ?? 'other' }, n);
    }
  }
}
