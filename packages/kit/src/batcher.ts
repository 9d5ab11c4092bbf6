/**
 * Natural batching ("group commit") for a hot write path: items submitted while a flush is in flight
 * wait and go together in the next flush, so a lone item is sent at once (no added latency when idle)
 * and a burst costs one round trip per batch instead of one per item.
 *
 * `run` receives a batch and returns one result per item, in the same order. A result that is an
 * Error (or a rejected run) fails only the items it belongs to; nothing is retried here: the caller's
 * own rules decide, exactly as for a single call.
 */
export interface BatcherOptions {
  /** At most this many items per flush. */
  maxBatch: number;
  /** At most this many flushes at a time (more items wait in the queue). */
  maxInFlight: number;
  /**
   * Wait for the end of the current turn of the event loop before flushing (setImmediate), so that
   * everything submitted in one turn (answers read from one socket, requests parsed together) leaves
   * in one flush. Costs microseconds of latency.
   */
  sameTurn?: boolean;
  /** Told the size of every flush (for a batch-size metric). */
  onFlush?: (size: number) => void;
}

interface Pending<I, O> {
  item: I;
  resolve: (value: O) => void;
  reject: (error: unknown) => void;
}

export class Batcher<I, O> {
  private queue: Pending<I, O>[] = [];
  private inFlight = 0;
  private scheduled = false;

  constructor(
    private readonly run: (items: I[]) => Promise<(O | Error)[]>,
    private readonly options: BatcherOptions,
  ) {
    if (options.maxBatch < 1 || options.maxInFlight < 1) throw new Error('batcher limits must be at least 1');
  }

  submit(item: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.queue.push({ item, resolve, reject });
      this.schedule();
    });
  }

  private schedule(): void {
    if (!this.options.sameTurn) {
      this.pump();
      return;
    }
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      this.pump();
    });
  }

  /** Items waiting for a flush (for tests and metrics). */
  get waiting(): number {
    return this.queue.length;
  }

  private pump(): void {
    while (this.inFlight < this.options.maxInFlight && this.queue.length > 0) {
      const batch = this.queue.splice(0, this.options.maxBatch);
      this.options.onFlush?.(batch.length);
      this.inFlight++;
      void this.flush(batch).finally(() => {
        this.inFlight--;
        this.pump();
      });
    }
  }

  private async flush(batch: Pending<I, O>[]): Promise<void> {
    let results: (O | Error)[];
    try {
      results = await this.run(batch.map((p) => p.item));
      if (results.length !== batch.length) throw new Error('batch returned the wrong number of results');
    } catch (error) {
      for (const p of batch) p.reject(error);
      return;
    }
    batch.forEach((p, i) => {
      const r = results[i];
      if (r instanceof Error) p.reject(r);
      else p.resolve(r as O);
    });
  }
}
