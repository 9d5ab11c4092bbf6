import { timestampDate } from '@bufbuild/protobuf/wkt';
import { Code, ConnectError } from '@connectrpc/connect';
import type { AdapterClient, AdapterDirectory } from '@dnc/kit';
import { checkAt, signalWithin } from '@dnc/kit';
import { registryv1 } from '@dnc/proto';
import { backoffMs, classifyAdapterError, type FailureCause, JobFailure } from '../domain/failures.js';
import type { InputElements } from '../domain/input-elements.js';
import { isConclusive } from '../domain/result.js';
import { inputsOf, type UnitInputs } from './input.js';

const { Outcome } = registryv1;

/** Why execution stopped before every unit completed, other than a job failure. */
export class ExecutionStopped extends Error {
  constructor(readonly reason: 'cancel' | 'lease_lost' | 'shutdown') {
    super(`execution stopped: ${reason}`);
    this.name = 'ExecutionStopped';
  }
}

export interface ExecutionHooks {
  /** Before each adapter call: false when the job must not call out any more (cancel, lease). */
  beginCall(): Promise<'go' | 'cancel' | 'lease_lost'>;
  /** After each adapter call (whatever its outcome): the call is reconciled. */
  endCall(): Promise<'go' | 'cancel' | 'lease_lost'>;
  /**
   * Before a unit's call is tried again (its last one failed, so its outcome is known): whether the job
   * may still call out. A cancel accepted meanwhile applies now, not after every retry (spec: running
   * "until the call outcome is reconciled, then cancelled").
   */
  beforeRetry?(): Promise<'go' | 'cancel' | 'lease_lost'>;
  /** Aborted when the lease is lost or the worker shuts down. */
  signal: AbortSignal;
  stopReason(): 'lease_lost' | 'shutdown';
  /** Just before each adapter call: which unit, which try of it (the invariant checker reads these). */
  onCall?(unit: number, attempt: number): void;
  /** A call that failed: which unit and try, and the error's RPC code (no message: it may carry data). */
  onCallFailed?(unit: number, attempt: number, code: string): void;
  /**
   * Each unit's answer: when the registry snapshot it was read from was taken. Undefined when it names
   * none and none was read (every input invalid, a remote registry not asked); null when it names none for
   * outcomes read from the registry (an adapter breaking the contract): the result's freshness is unknown.
   */
  onSnapshot?(snapshotTime: Date | null | undefined): void;
  /**
   * A unit answered (every outcome conclusive), its phones and their outcomes: the result's share of it
   * can be rendered now, while other units are out. A throw ends the attempt as a platform failure.
   */
  onUnitAnswered?(from: number, phones: InputElements, outcomes: Uint8Array): void;
}

export interface ExecutionOptions {
  unitSize: number;
  concurrency: number;
  retries: number;
  callTimeoutMs: number;
  sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
  /**
   * When the country's maintenance window an operator declared ends (epoch ms), while one is in force
   * (DeclaredMaintenance): checked before each call, it fails the job as the maintenance an adapter
   * reports does.
   */
  declaredMaintenance?: (country: string) => Promise<number | undefined>;
}

/** The adapter client for an address discovery gave, which must prove it serves `country`. */
export type AdapterClients = (address: string, country: string) => AdapterClient;

const defaultSleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    const t = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => {
      clearTimeout(t);
      resolve();
    });
  });

/** The job failure of a country in maintenance (Retry-After: seconds to the window's end), if it is. */
function maintenanceFailure(directory: AdapterDirectory, country: string): JobFailure | undefined {
  const maintenance = directory.instances(country).find((e) => e.status === 'maintenance');
  if (!maintenance) return undefined;
  const until = maintenance.maintenance_until ? Date.parse(maintenance.maintenance_until) : Number.NaN;
  const retryAfterSeconds = Number.isFinite(until) ? Math.max(0, Math.ceil((until - Date.now()) / 1000)) : 0;
  return new JobFailure({ kind: 'maintenance', retryAfterSeconds });
}

/** What every unit of one execution is checked with. */
interface UnitRun {
  country: string;
  phones: UnitInputs;
  directory: AdapterDirectory;
  clients: AdapterClients;
  hooks: ExecutionHooks;
  options: ExecutionOptions;
  sleep: (ms: number, signal: AbortSignal) => Promise<void>;
  /** Aborted when the attempt ends (the hooks' signal, or a sibling unit stopped the job). */
  signal: AbortSignal;
  /** Why the attempt ended, once `signal` is aborted. */
  stopped: () => unknown;
  /** The answers, each unit writing its own slice. */
  outcomes: Uint8Array;
}

/**
 * One unit, phones [from, to), against an adapter discovery picks, tried up to `retries` more times
 * on a temporary failure; maintenance, a permanent failure or the last failure fails the job. Returns
 * the phones the answered call was made with.
 */
async function checkUnit(run: UnitRun, from: number, to: number): Promise<InputElements> {
  const { country, directory, hooks, options, signal } = run;
  let lastCause: FailureCause = { kind: 'country_unavailable', retryAfterSeconds: 0 };
  const phones = run.phones.slice(from, to);
  // Sent as the input's bytes (phone_list), never made strings; the same bytes on every try.
  const list = phones.phoneList();
  for (let attempt = 0; attempt <= options.retries; attempt++) {
    if (attempt > 0) {
      await run.sleep(backoffMs(attempt - 1), signal);
      // Unknown (PostgreSQL unreachable for a moment): tried anyway; the unit's end reconciles it.
      const may = await hooks.beforeRetry?.().catch(() => 'go' as const);
      if (may && may !== 'go') throw new ExecutionStopped(may);
    }
    if (signal.aborted) throw run.stopped();
    const declared = await options.declaredMaintenance?.(country);
    if (declared !== undefined) {
      const retryAfterSeconds = Math.max(0, Math.ceil((declared - Date.now()) / 1000));
      throw new JobFailure({ kind: 'maintenance', retryAfterSeconds });
    }
    const adapter = directory.pick(country);
    if (!adapter) {
      const maintenance = maintenanceFailure(directory, country);
      if (maintenance) throw maintenance;
      lastCause = { kind: 'country_unavailable', retryAfterSeconds: 0 };
      continue;
    }
    // A plain timer, not AbortSignal.timeout inside AbortSignal.any: collected, that one never fires
    // (kit deadline-signal.ts); it was safe here only while `timeout` was read again after the await.
    const call = signalWithin(options.callTimeoutMs, signal);
    try {
      hooks.onCall?.(Math.floor(from / options.unitSize), attempt);
      const res = await checkAt(run.clients(adapter.address, country), country, list, {
        signal: call.signal,
      });
      if (res.outcomes.length !== to - from || !res.outcomes.every(isConclusive)) {
        lastCause = { kind: 'inconclusive' };
        continue;
      }
      run.outcomes.set(res.outcomes, from);
      hooks.onSnapshot?.(
        res.snapshotTime
          ? timestampDate(res.snapshotTime)
          : res.outcomes.some((o) => o === Outcome.SAFE || o === Outcome.PROHIBITED)
            ? null
            : undefined,
      );
      return phones;
    } catch (error) {
      if (signal.aborted) throw run.stopped();
      // The call's own timeout aborts it as Canceled, a code that is not retried: it is a deadline
      // exceeded (a hung adapter), and retried as one.
      const failure = call.signal.aborted
        ? new ConnectError('adapter call timed out', Code.DeadlineExceeded)
        : error;
      hooks.onCallFailed?.(
        Math.floor(from / options.unitSize),
        attempt,
        Code[ConnectError.from(failure).code],
      );
      const { cause, retryable } = classifyAdapterError(failure);
      if (!retryable) throw new JobFailure(cause);
      lastCause = cause;
    } finally {
      call.clear();
    }
  }
  throw new JobFailure(lastCause);
}

/**
 * Run a job's inputs in units against the country's adapter with bounded concurrency. Each unit is
 * retried (bounded, exponential backoff with jitter) on temporary failures; known maintenance stops
 * the job at once. The answer is complete or the job fails: there is never a partial result. A unit
 * starts once its phones are there (`UnitInputs.ready`: the input may still be read while the first
 * units run); an input that cannot be read ends the attempt with that error.
 */
export async function executeUnits(
  country: string,
  input: readonly string[] | UnitInputs,
  directory: AdapterDirectory,
  clients: AdapterClients,
  hooks: ExecutionHooks,
  options: ExecutionOptions,
): Promise<Uint8Array> {
  const phones = Array.isArray(input) ? inputsOf(input) : (input as UnitInputs);
  const outcomes = new Uint8Array(phones.length);
  const units: [number, number][] = [];
  for (let i = 0; i < phones.length; i += options.unitSize)
    units.push([i, Math.min(phones.length, i + options.unitSize)]);
  let next = 0;
  let stop: unknown;
  // The first runner to stop the job (a failure, a cancel, a lost lease, a storage error) halts its
  // siblings' calls in flight: nothing of this attempt keeps calling out after it has ended.
  const halt = new AbortController();
  const stopWith = (reason: unknown) => {
    stop ??= reason;
    halt.abort();
  };
  const run: UnitRun = {
    country,
    phones,
    directory,
    clients,
    hooks,
    options,
    sleep: options.sleep ?? defaultSleep,
    signal: AbortSignal.any([hooks.signal, halt.signal]),
    stopped: () =>
      hooks.signal.aborted
        ? new ExecutionStopped(hooks.stopReason())
        : (stop ?? new ExecutionStopped('shutdown')),
    outcomes,
  };

  const runner = async (): Promise<void> => {
    while (!stop && next < units.length) {
      const [from, to] = units[next++]!;
      try {
        await phones.ready(to);
      } catch (error) {
        stopWith(run.signal.aborted ? run.stopped() : error);
        return;
      }
      if (stop) return;
      let begin: Awaited<ReturnType<ExecutionHooks['beginCall']>>;
      try {
        begin = await hooks.beginCall();
      } catch (error) {
        // The call could not be recorded (PostgreSQL unreachable): the attempt ends, given back.
        stopWith(error);
        return;
      }
      if (begin !== 'go') {
        stopWith(new ExecutionStopped(begin));
        return;
      }
      // The phones the unit was checked with, once it is answered.
      let answered: InputElements | undefined;
      try {
        answered = await checkUnit(run, from, to);
      } catch (error) {
        stopWith(
          error instanceof JobFailure || error instanceof ExecutionStopped
            ? error
            : new JobFailure({ kind: 'platform' }),
        );
      } finally {
        // The call's outcome is reconciled here, also when it failed: a pending cancel now applies.
        const after = await hooks.endCall().catch(() => 'lease_lost' as const);
        if (after !== 'go') stopWith(new ExecutionStopped(after));
      }
      if (answered && !stop && hooks.onUnitAnswered) {
        try {
          hooks.onUnitAnswered(from, answered, outcomes.subarray(from, to));
          // Its phones are rendered: the input need not hold them any longer.
          phones.release?.(from, to);
        } catch {
          stopWith(new JobFailure({ kind: 'platform' }));
          return;
        }
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(options.concurrency, units.length) }, runner));
  if (stop) throw stop;
  return outcomes;
}
