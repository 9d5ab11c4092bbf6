// Resident memory of every process of the stack, sampled while a phase runs (issue 18 item 7).
import { rssMiB } from './system.mjs';

const INTERVAL_MS = 50;

/** RSS (MiB) of every process of the stack now. */
export function rssNow(stack) {
  const out = {};
  for (const name of stack.processes.keys()) {
    const mib = rssMiB(stack.child(name)?.pid).rss;
    if (mib !== null) out[name] = mib;
  }
  return out;
}

/**
 * Samples every process's RSS every 50 ms from construction to `stop()`: per process the RSS at the
 * start, the peak and the mean. A peak between two samples can be missed by up to 50 ms of growth.
 */
export class RssSampler {
  constructor(stack) {
    this.stack = stack;
    this.start = rssNow(stack);
    this.peak = { ...this.start };
    this.sum = { ...this.start };
    this.samples = 1;
    this.timer = setInterval(() => this.sample(), INTERVAL_MS);
    this.timer.unref();
  }

  sample() {
    const now = rssNow(this.stack);
    for (const [k, v] of Object.entries(now)) {
      this.peak[k] = Math.max(this.peak[k] ?? 0, v);
      this.sum[k] = (this.sum[k] ?? 0) + v;
    }
    this.samples++;
  }

  stop() {
    clearInterval(this.timer);
    this.sample();
  }

  summary() {
    return Object.fromEntries(
      Object.keys(this.peak).map((k) => [
        k,
        { start: this.start[k] ?? null, peak: this.peak[k], mean: Math.round(this.sum[k] / this.samples) },
      ]),
    );
  }
}
