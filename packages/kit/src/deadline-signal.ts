/**
 * A signal that aborts when `signal` does, or after `ms` with a `TimeoutError` (as `AbortSignal.timeout`
 * would); `clear()` once the work is over releases its timer and its listener.
 *
 * Not `AbortSignal.any([signal, AbortSignal.timeout(ms)])`: on Node 20 a timeout signal that nothing else
 * references is held only weakly inside the composite, and once garbage collected it never fires
 * (nodejs/node#57736). Found 2026-12-05: the 5 s default deadline of internal calls never came under load,
 * and a dashboard's key creation waited 7 s for admission's answer. A plain timer holds it here.
 */
export function signalWithin(ms: number, signal?: AbortSignal): { signal: AbortSignal; clear(): void } {
  const controller = new AbortController();
  if (signal?.aborted) {
    controller.abort(signal.reason);
    return { signal: controller.signal, clear: () => {} };
  }
  const onAbort = () => {
    clearTimeout(timer);
    controller.abort(signal?.reason);
  };
  const timer = setTimeout(() => {
    signal?.removeEventListener('abort', onAbort);
    controller.abort(new DOMException('The operation was aborted due to timeout', 'TimeoutError'));
  }, ms);
  // As AbortSignal.timeout's: the timer alone does not keep the process alive.
  timer.unref();
  signal?.addEventListener('abort', onAbort, { once: true });
  return {
    signal: controller.signal,
    clear: () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
    },
  };
}
