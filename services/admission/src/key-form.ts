import { Gauge, type Logger, type Pool, type Registry, type Service } from '@dnc/kit';
import type { AdmissionConfig } from './config.js';
import type { ClaimStore, KeyForm } from './store/index.js';
import { checkIdempotencyKeySecret } from './store/key-secret-check.js';

/** Records without a MAC created this recently say a pod of an older release still takes requests. */
export const OLDER_RELEASE_WINDOW_SECONDS = 600;

/**
 * The form new idempotency claims are written in (store/claims.ts, `KeyForm`), and whether the
 * Idempotency-Key's plain hash is still looked up at all.
 *
 * Form: `transition` when configured so. `keyed` when configured so and no pod of an older release may be
 * running: those pods look claims up, and conflict, only on the plain hash, so a keyed claim beside them
 * lets a retry of it through one of them be admitted and charged again. Such a pod is seen by the records
 * it writes (no MAC): while one was created within the window, claims keep the plain hash too. Until the
 * first look succeeds, claims are written in the transition form: never the unsafe one, it only keeps the
 * plain hash a while longer. A look that fails keeps the form the last one decided, while that one is
 * recent (half the window): in a settled keyed deployment a failed look wrote plain hashes, kept for up to
 * 31 days, protecting nothing (found by a review, 2026-12-05). Blind for longer, claims go back to the
 * transition form.
 *
 * Lookups: the plain hash goes to PostgreSQL (a bind parameter, which its logs of slow statements print)
 * only while a claim is written in the transition form, a record without a MAC is still kept, or a look
 * has failed and the last decision is being trusted: blind, a record an older pod wrote since cannot be
 * ruled out, so it is looked for too.
 *
 * An upgrade rolled out straight to `keyed` is thereby safe while the older pods write claims; one whose
 * older pods only answered retries, or sat idle for the window and then took one, is not, so the chart
 * refuses that upgrade and the documented one rolls out `transition` first (docs/deploy.md,
 * "Idempotency-Key records").
 */
export class KeyFormGuard {
  private timer: NodeJS.Timeout | undefined;
  private checking: Promise<KeyForm> | undefined;
  private form: KeyForm = 'transition';
  /** When the last look succeeded (ms). */
  private lastLookAt: number | undefined;
  private readonly gauge: Gauge<'form'>;
  private readonly olderSeen: Gauge;

  constructor(
    private readonly claims: ClaimStore,
    private readonly logger: Logger,
    private readonly configured: KeyForm,
    private readonly intervalMs: number,
    metrics: Registry,
    /** A monotonic clock (ms): a wall clock stepped back would stretch the time a failed look is trusted. */
    private readonly now: () => number = () => performance.now(),
  ) {
    this.gauge = new Gauge({
      name: 'dnc_idempotency_key_form',
      help: '1 for the form new idempotency claims are written in: keyed (MAC only) or transition (the plain hash too).',
      labelNames: ['form'],
      registers: [metrics],
    });
    this.olderSeen = new Gauge({
      name: 'dnc_idempotency_older_release_writing',
      help: 'Configured keyed, 1 while records without a MAC were created in the last 10 minutes: a pod of a release that stores plain Idempotency-Key hashes takes requests beside keyed claims.',
      registers: [metrics],
    });
    this.olderSeen.set(0);
    this.apply('transition', true);
    if (configured === 'transition')
      logger.info(
        'idempotency claims keep the plain Idempotency-Key hash too (DNC_IDEMPOTENCY_KEY_FORM=transition)',
      );
  }

  /** The first look, awaited before the service takes requests; then one every interval. */
  async start(): Promise<void> {
    await this.check();
    this.timer = setInterval(() => void this.check(), this.intervalMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
  }

  /** Look once (concurrent calls share it); the form in effect after it. */
  check(): Promise<KeyForm> {
    this.checking ??= this.look().finally(() => {
      this.checking = undefined;
    });
    return this.checking;
  }

  private async look(): Promise<KeyForm> {
    let seen: Awaited<ReturnType<ClaimStore['recordsWithoutMac']>>;
    try {
      seen = await this.claims.recordsWithoutMac(OLDER_RELEASE_WINDOW_SECONDS);
    } catch (err) {
      const blind =
        this.lastLookAt === undefined ||
        this.now() - this.lastLookAt > (OLDER_RELEASE_WINDOW_SECONDS * 1000) / 2;
      if (!blind) {
        this.logger.warn(
          { err, form: this.form },
          'idempotency key form not checked; kept as the last look decided',
        );
        // Blind to records written since: look them up by the plain hash too (sent, never stored).
        return this.apply(this.form, true);
      }
      if (this.form !== 'transition')
        this.logger.warn(
          { err },
          'idempotency key form not checked for 5 minutes: claims keep the plain hash too',
        );
      return this.apply('transition', true);
    }
    this.lastLookAt = this.now();
    this.olderSeen.set(this.configured === 'keyed' && seen.recent ? 1 : 0);
    const form = this.configured === 'transition' || seen.recent ? 'transition' : 'keyed';
    if (form !== this.form && this.configured === 'keyed')
      this.logger.info(
        { form, windowSeconds: OLDER_RELEASE_WINDOW_SECONDS },
        form === 'transition'
          ? 'a release that stores plain Idempotency-Key hashes wrote records lately: claims keep that hash too'
          : 'idempotency claims are keyed only',
      );
    return this.apply(form, form === 'transition' || seen.any);
  }

  private apply(form: KeyForm, plainHashLookups: boolean): KeyForm {
    this.form = form;
    this.claims.useForm(form, plainHashLookups);
    this.gauge.set({ form: 'keyed' }, form === 'keyed' ? 1 : 0);
    this.gauge.set({ form: 'transition' }, form === 'transition' ? 1 : 0);
    return form;
  }
}

/**
 * The idempotency key's secret checked against the one the records were written under (the process
 * refuses to start on another), and the form claims are written in, looked at once before any request.
 */
export async function openKeyForm(
  service: Service,
  config: AdmissionConfig,
  pool: Pool,
  claims: ClaimStore,
): Promise<KeyFormGuard> {
  await checkIdempotencyKeySecret(pool, config.DNC_IDEMPOTENCY_KEY_SECRET);
  const keyForm = new KeyFormGuard(
    claims,
    service.logger,
    config.DNC_IDEMPOTENCY_KEY_FORM,
    config.DNC_IDEMPOTENCY_KEY_FORM_CHECK_MS,
    service.metrics,
  );
  await keyForm.start();
  service.onClose('idempotency key form', () => keyForm.stop());
  return keyForm;
}
