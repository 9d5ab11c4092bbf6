import type { Logger } from '@dnc/kit';
import type { ClaimStore, KeyForm } from './store/index.js';

/**
 * The form new idempotency claims are written in (store/claims.ts, `KeyForm`). `transition` when
 * configured so. `keyed` when configured so and no pod of an older release may be running: those pods
 * look claims up, and conflict, only on the Idempotency-Key's plain hash, so a keyed claim beside them
 * lets a retry of it through one of them be admitted and charged again. Such a pod is seen by the
 * records it writes (no MAC): while one was created within `windowSeconds`, claims keep the plain hash
 * too. Until the first look succeeds, and whenever one fails, the form stays as it was (`transition` at
 * start): a claim in the transition form is never the unsafe one, it only keeps the plain hash longer.
 *
 * An upgrade rolled out straight to `keyed` is thereby safe while the older pods take requests; one
 * whose older pods sat idle for the window and then took a retry is not, so the documented upgrade
 * still rolls out `transition` first (docs/deploy.md, "Idempotency-Key records").
 */
export class KeyFormGuard {
  private timer: NodeJS.Timeout | undefined;
  private checking: Promise<KeyForm> | undefined;
  private current: KeyForm = 'transition';

  constructor(
    private readonly claims: ClaimStore,
    private readonly logger: Logger,
    private readonly configured: KeyForm,
    private readonly intervalMs: number,
    private readonly windowSeconds = 600,
  ) {
    claims.useForm(this.current);
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
    if (this.configured === 'transition') return this.use('transition', 'configured');
    try {
      const older = await this.claims.olderReleaseWroteWithin(this.windowSeconds);
      return this.use(older ? 'transition' : 'keyed', older ? 'older release' : 'none older');
    } catch (err) {
      this.logger.warn({ err, form: this.current }, 'idempotency key form not checked; kept as it was');
      return this.current;
    }
  }

  private use(form: KeyForm, why: 'configured' | 'older release' | 'none older'): KeyForm {
    if (form !== this.current || why === 'configured')
      this.logger.info(
        { form, windowSeconds: this.windowSeconds },
        why === 'older release'
          ? 'a release that stores plain Idempotency-Key hashes wrote records lately: claims keep that hash too'
          : why === 'configured'
            ? 'idempotency claims keep the plain Idempotency-Key hash too (DNC_IDEMPOTENCY_KEY_FORM=transition)'
            : 'idempotency claims are keyed only',
      );
    this.current = form;
    this.claims.useForm(form);
    return form;
  }
}
