import { CanonicalInputReader } from '../domain/canonical-input.js';

/** The phones of a job as its units take them: `ready(to)` once phones [0, to) are there. */
export interface UnitInputs {
  readonly length: number;
  /** Resolves once phones [0, to) can be sliced; rejects when they never will (the input unreadable). */
  ready(to: number): Promise<void>;
  slice(from: number, to: number): string[];
  /** Phones [from, to) will not be sliced again (their unit is answered and rendered): let them go. */
  release?(from: number, to: number): void;
}

/** Phones already in memory. */
export function inputsOf(phones: readonly string[]): UnitInputs {
  return {
    length: phones.length,
    ready: () => Promise.resolve(),
    slice: (from, to) => phones.slice(from, to),
  };
}

/** What a released phone's slot holds once its unit is rendered. */
const RELEASED = '';

interface Waiter {
  to: number;
  resolve: () => void;
  reject: (error: unknown) => void;
}

/**
 * A job's input read segment by segment while its first units already run: the phones of each segment
 * are parsed as it arrives (CanonicalInputReader), so the first adapter call waits for one segment, not
 * for the whole input to be read, decrypted, decompressed and parsed. The input must hold exactly
 * `length` phones (the count the scheduler stored with it); anything else is an error, as is a read that
 * fails. Reading stops (the segments' iterator closed) when `signal` aborts.
 */
export class StreamedInputs implements UnitInputs {
  private readonly phones: string[] = [];
  private waiters: Waiter[] = [];
  private failure: { error: unknown } | undefined;
  /** Milliseconds the whole input took to read and parse, once it is read. */
  readMs: number | undefined;
  /** Settles when every phone is read and the count checked (or the read failed or stopped). */
  private readonly done: Promise<void>;

  constructor(
    readonly length: number,
    segments: AsyncIterable<Buffer>,
    signal: AbortSignal,
  ) {
    this.done = this.pump(segments, signal);
    // Whoever needs the outcome awaits `all()` or `ready()`; a failure nobody waits for is not unhandled.
    this.done.catch(() => {});
  }

  ready(to: number): Promise<void> {
    if (this.failure) return Promise.reject(this.failure.error);
    if (this.phones.length >= to) return Promise.resolve();
    return new Promise((resolve, reject) => this.waiters.push({ to, resolve, reject }));
  }

  slice(from: number, to: number): string[] {
    return this.phones.slice(from, to);
  }

  release(from: number, to: number): void {
    // Slots kept (the count stays checkable), their strings dropped for the collector.
    const end = Math.min(to, this.phones.length);
    for (let i = from; i < end; i++) this.phones[i] = RELEASED;
  }

  /**
   * Every phone, once the whole input is read and holds exactly `length` of them (rejects when it does
   * not or could not be read). A released unit's slots hold an empty string instead of its phones.
   */
  async all(): Promise<string[]> {
    await this.done;
    return this.phones;
  }

  private async pump(segments: AsyncIterable<Buffer>, signal: AbortSignal): Promise<void> {
    const reader = new CanonicalInputReader();
    const start = performance.now();
    try {
      for await (const segment of segments) {
        if (signal.aborted) throw signal.reason;
        this.add(reader.push(segment));
      }
      if (signal.aborted) throw signal.reason;
      this.add(reader.end());
      if (this.phones.length !== this.length) throw new Error('the input does not hold its phone count');
      this.readMs = performance.now() - start;
    } catch (error) {
      this.failure = { error };
      for (const w of this.waiters) w.reject(error);
      this.waiters = [];
      throw error;
    }
  }

  private add(phones: string[]): void {
    for (let i = 0; i < phones.length; i++) this.phones.push(phones[i]!);
    if (this.phones.length > this.length) throw new Error('the input does not hold its phone count');
    const have = this.phones.length;
    if (this.waiters.length === 0) return;
    const still: Waiter[] = [];
    for (const w of this.waiters) {
      if (w.to <= have) w.resolve();
      else still.push(w);
    }
    this.waiters = still;
  }
}
