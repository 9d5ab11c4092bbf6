import type { AdapterDirectory, Logger } from '@dnc/kit';
import type { JsMsg } from '@nats-io/jetstream';
import type { KeyRing } from '../crypto/envelope.js';
import type { InputElements } from '../domain/input-elements.js';
import { ResultBuilder } from '../domain/result.js';
import type { QuotaSettlement } from '../settlement.js';
import { readBlob } from '../store/blobs.js';
import type { JobRow, JobStore } from '../store/jobs.js';
import { type AdapterClients, type ExecutionHooks, ExecutionStopped, executeUnits } from './execute.js';
import { StreamedInputs } from './input.js';
import { LeaseKeeper } from './lease.js';
import type { AttemptOutcomes } from './outcome.js';

export interface AttemptDeps {
  store: JobStore;
  keys: KeyRing;
  directory: AdapterDirectory;
  clients: AdapterClients;
  settlement: QuotaSettlement;
  logger: Logger;
  /** The maintenance windows operators declared (ExecutionOptions.declaredMaintenance). */
  declaredMaintenance?: (country: string) => Promise<number | undefined>;
}

export interface AttemptOptions {
  unitSize: number;
  unitConcurrency: number;
  retries: number;
  callTimeoutMs: number;
  leaseMs: number;
  ackWaitMs: number;
}

/** What one attempt runs with, and where its end is written. */
export interface AttemptContext {
  deps: AttemptDeps;
  options: AttemptOptions;
  outcomes: AttemptOutcomes;
}

/** A job claimed for this attempt, with the attempt's lease token. */
export interface Claimed {
  job: JobRow;
  token: string;
}

/**
 * A job's inputs, found as its segments are read (worker/input.ts): the first units call out while the
 * rest is read. The decrypted segments are the phones themselves (InputElements), held until their
 * units are rendered (see memory.ts).
 */
function readPhones(store: JobStore, keys: KeyRing, job: JobRow, signal: AbortSignal): StreamedInputs {
  const segments = readBlob(store.pool, keys, { jobId: job.id, orgId: job.orgId, kind: 'input' });
  return new StreamedInputs(job.submittedCount, segments, signal);
}

/**
 * The attempt's lease renewed in PostgreSQL and its message kept alive while it runs; a lease that
 * cannot be renewed aborts the attempt, which then stops as `lease_lost` (else as `shutdown`).
 */
function keepLease(
  ctx: AttemptContext,
  { job, token }: Claimed,
  msg: JsMsg,
  abort: AbortController,
  grantedAt: number,
) {
  const { leaseMs, ackWaitMs } = ctx.options;
  let stopReason: 'lease_lost' | 'shutdown' = 'shutdown';
  const lease = new LeaseKeeper({
    leaseMs,
    intervalMs: Math.max(250, Math.min(leaseMs, ackWaitMs) / 3),
    grantedAt,
    renew: () => ctx.deps.store.renewLease(job.id, token, leaseMs),
    heartbeat: () => {
      try {
        msg.working();
      } catch {
        // NATS reconnecting: the lease in Postgres still protects the job.
      }
    },
    onLost: () => {
      stopReason = 'lease_lost';
      abort.abort();
    },
  });
  lease.start();
  return { lease, stopReason: () => stopReason };
}

/**
 * What executeUnits does around each adapter call: the call counted under the lease (a cancel or a
 * lost lease stops the attempt), one log line per call and per failed call (ids and counts only).
 */
function executionHooks(
  ctx: AttemptContext,
  { job, token }: Claimed,
  keeper: ReturnType<typeof keepLease>,
  signal: AbortSignal,
  onSnapshot: (time: Date | null | undefined) => void,
): ExecutionHooks {
  const { store, logger } = ctx.deps;
  const state = async (ok: boolean): Promise<'go' | 'cancel' | 'lease_lost'> => {
    if (keeper.lease.isLost) return 'lease_lost';
    if (ok) return 'go';
    const r = await store.renewLease(job.id, token, ctx.options.leaseMs);
    if (r.lost) return 'lease_lost';
    return r.cancelRequested ? 'cancel' : 'go';
  };
  return {
    signal,
    stopReason: keeper.stopReason,
    // One line per call (ids and counts only): the invariant checker bounds calls per unit by it.
    onCall: (unit, attempt) =>
      logger.info(
        {
          job_id: job.id,
          attempt: job.attempts,
          unit,
          try: attempt + 1,
          max_tries: ctx.options.retries + 1,
        },
        'adapter call',
      ),
    onCallFailed: (unit, attempt, code) =>
      logger.warn(
        { job_id: job.id, attempt: job.attempts, unit, try: attempt + 1, code },
        'adapter call failed',
      ),
    onSnapshot,
    beginCall: async () => state(await store.beginExternalCall(job.id, token)),
    beforeRetry: async () => state(false),
    endCall: async () => {
      const r = await store.endExternalCall(job.id, token);
      return r.lost || keeper.lease.isLost ? 'lease_lost' : r.cancelRequested ? 'cancel' : 'go';
    },
  };
}

/**
 * One execution attempt of a claimed job, under its lease: the inputs read, every unit checked
 * against the country's adapter, the result stored with the job's terminal state, the reservation
 * settled, the message acked. Whatever throws is recorded by AttemptOutcomes.afterError.
 */
export async function runAttempt(
  ctx: AttemptContext,
  claimed: Claimed,
  msg: JsMsg,
  abort: AbortController,
  grantedAt: number,
): Promise<void> {
  const { store, settlement, logger } = ctx.deps;
  const { job, token } = claimed;
  const keeper = keepLease(ctx, claimed, msg, abort, grantedAt);
  // Reading stops with the attempt: its end, a lost lease or a shutdown.
  const reading = new AbortController();
  const stopReading = () => reading.abort(new ExecutionStopped(keeper.stopReason()));
  abort.signal.addEventListener('abort', stopReading, { once: true });
  try {
    const t0 = performance.now();
    const input = readPhones(store, ctx.deps.keys, job, reading.signal);
    // The oldest snapshot any unit was answered from: the result is only as fresh as that. Unknown (no
    // X-Registry-Snapshot-At) once a unit's registry answers name none: the others' would overstate it.
    let snapshotAt: Date | undefined;
    let snapshotUnknown = false;
    // Each unit's share of the result is rendered as it is answered, while the adapter has the others.
    const result = new ResultBuilder(input.length);
    const hooks = {
      ...executionHooks(ctx, claimed, keeper, abort.signal, (time) => {
        if (time === null) snapshotUnknown = true;
        else if (time && (!snapshotAt || time < snapshotAt)) snapshotAt = time;
      }),
      onUnitAnswered: (from: number, phones: InputElements, outcomes: Uint8Array) =>
        result.add(from, phones, outcomes),
    };
    await executeUnits(job.country, input, ctx.deps.directory, ctx.deps.clients, hooks, {
      unitSize: ctx.options.unitSize,
      concurrency: ctx.options.unitConcurrency,
      retries: ctx.options.retries,
      callTimeoutMs: ctx.options.callTimeoutMs,
      ...(ctx.deps.declaredMaintenance ? { declaredMaintenance: ctx.deps.declaredMaintenance } : {}),
    });
    // The whole input read, holding exactly its count (else this throws): every unit was answered.
    await input.complete();
    const t2 = performance.now();
    const done = await store.complete(
      job.id,
      token,
      () => result.document(),
      snapshotUnknown ? undefined : snapshotAt,
    );
    // Phase timings only: no inputs, no outcomes.
    logger.info(
      {
        job_id: job.id,
        inputs: input.length,
        // Reading runs beside the first units: read_ms is part of check_ms (start to every unit answered).
        read_ms: Math.round(input.readMs ?? 0),
        check_ms: Math.round(t2 - t0),
        store_ms: Math.round(performance.now() - t2),
      },
      'job executed',
    );
    if (done.kind === 'lost') ctx.outcomes.stale(job, 'result refused');
    else if (done.kind === 'ended')
      // Cancelled or expired during the write (final-write.ts): whoever ended it settled it.
      logger.info({ job_id: job.id }, 'job ended while its result was written; the result was discarded');
    else {
      ctx.outcomes.finished(done.job);
      await settlement.settle(done.job);
    }
    msg.ack();
  } catch (error) {
    // Past a lease without a confirmed renewal, whatever went wrong (a call timed out while the
    // process was stopped) is not this attempt's to record.
    await ctx.outcomes.afterError(
      job,
      token,
      msg,
      keeper.lease.isLost ? new ExecutionStopped('lease_lost') : error,
    );
  } finally {
    abort.signal.removeEventListener('abort', stopReading);
    if (!reading.signal.aborted) reading.abort(new ExecutionStopped('shutdown'));
    keeper.lease.stop();
  }
}
