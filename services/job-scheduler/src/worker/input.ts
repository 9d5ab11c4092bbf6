import { CanonicalInputReader, readCanonicalInput } from '../domain/canonical-input.js';
import { InputElements } from '../domain/input-elements.js';

/** The phones of a job as its units take them: `ready(to)` once phones [0, to) are there. */
export interface UnitInputs {
  readonly length: number;
  /** Resolves once phones [0, to) can be sliced; rejects when they never will (the input unreadable). */
  ready(to: number): Promise<void>;
  slice(from: number, to: number): InputElements;
  /** Phones [from, to) will not be sliced again (their unit is answered and rendered): let them go. */
  release?(from: number, to: number): void;
}

/** Phones already in memory (as the canonical input's bytes: the form a job's units take). */
export function inputsOf(phones: readonly string[]): UnitInputs {
  const elements = readCanonicalInput(Buffer.from(JSON.stringify(phones), 'utf8'));
  return {
    length: elements.length,
    ready: () => Promise.resolve(),
    slice: (from, to) => elements.slice(from, to),
  };
}

interface Waiter {
  to: number;
  resolve: () => void;
  reject: (error: unknown) => void;
}

/** One piece of the input as it was read: the first phone's index, its elements, how many are released. */
interface Piece {
  from: number;
  count: number;
  /** Empty once all `count` are released. */
  elements: InputElements;
  released: number;
}

/**
 * A job's input read segment by segment while its first units already run: the elements of each
 * segment are found as it arrives (CanonicalInputReader), so the first adapter call waits for one
 * segment, not for the whole input to be read, decrypted and decompressed. The phones stay the input's
 * bytes (InputElements): no string is made for them. The input must hold exactly `length` phones (the
 * count the scheduler stored with it); anything else is an error, as is a read that fails. Reading
 * stops (the segments' iterator closed) when `signal` aborts. A piece whose phones are all released is
 * dropped.
 */
export class StreamedInputs implements UnitInputs {
  private readonly pieces: Piece[] = [];
  private count = 0;
  private waiters: Waiter[] = [];
  private failure: { error: unknown } | undefined;
  /** Milliseconds the whole input took to read, once it is read. */
  readMs: number | undefined;
  /** Settles when every phone is read and the count checked (or the read failed or stopped). */
  private readonly done: Promise<void>;

  constructor(
    readonly length: number,
    segments: AsyncIterable<Buffer>,
    signal: AbortSignal,
  ) {
    this.done = this.pump(segments, signal);
    // Whoever needs the outcome awaits `complete()` or `ready()`; a failure nobody waits for is not unhandled.
    this.done.catch(() => {});
  }

  ready(to: number): Promise<void> {
    if (this.failure) return Promise.reject(this.failure.error);
    if (this.count >= to) return Promise.resolve();
    return new Promise((resolve, reject) => this.waiters.push({ to, resolve, reject }));
  }

  slice(from: number, to: number): InputElements {
    const parts: InputElements[] = [];
    for (const piece of this.overlapping(from, to)) {
      if (piece.elements.length < piece.count) throw new Error('phones sliced after they were released');
      parts.push(piece.elements.slice(from - piece.from, to - piece.from));
    }
    return parts.length === 1 ? parts[0]! : InputElements.concat(parts);
  }

  release(from: number, to: number): void {
    for (const piece of this.overlapping(from, to)) {
      piece.released += Math.min(to, piece.from + piece.count) - Math.max(from, piece.from);
      // Every phone of the piece rendered: its bytes go.
      if (piece.released >= piece.count) piece.elements = InputElements.EMPTY;
    }
  }

  /** Resolves once the whole input is read and holds exactly `length` phones (rejects when it does not). */
  complete(): Promise<void> {
    return this.done;
  }

  /** The pieces holding any of phones [from, to), in order. */
  private *overlapping(from: number, to: number): Generator<Piece> {
    for (const piece of this.pieces) {
      if (piece.from + piece.count <= from) continue;
      if (piece.from >= to) return;
      yield piece;
    }
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
      if (this.count !== this.length) throw new Error('the input does not hold its phone count');
      this.readMs = performance.now() - start;
    } catch (error) {
      this.failure = { error };
      for (const w of this.waiters) w.reject(error);
      this.waiters = [];
      throw error;
    }
  }

  private add(elements: InputElements): void {
    if (elements.length === 0) return;
    this.pieces.push({ from: this.count, count: elements.length, elements, released: 0 });
    this.count += elements.length;
    if (this.count > this.length) throw new Error('the input does not hold its phone count');
    const have = this.count;
    if (this.waiters.length === 0) return;
    const still: Waiter[] = [];
    for (const w of this.waiters) {
      if (w.to <= have) w.resolve();
      else still.push(w);
    }
    this.waiters = still;
  }
}
