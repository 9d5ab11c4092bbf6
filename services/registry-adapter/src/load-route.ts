import { timestampDate, timestampFromDate } from '@bufbuild/protobuf/wkt';
import { Code, ConnectError } from '@dnc/kit';
import { registryv1 } from '@dnc/proto';
import type { AdapterDeps } from './routes.js';
import { type LoadMode, LoadRefused, loadRegistry } from './store/registry-load.js';

/** How far in the future a load's `as_of` may be (clocks apart), no more. */
const AS_OF_FUTURE_MS = 5 * 60_000;

const LOAD_MODES: Partial<Record<registryv1.LoadMode, LoadMode>> = {
  [registryv1.LoadMode.REPLACE]: 'replace',
  [registryv1.LoadMode.ADD]: 'add',
  [registryv1.LoadMode.REMOVE]: 'remove',
};

/**
 * The stream's next message; DEADLINE_EXCEEDED when none comes within `ms`, CANCELLED once the caller has
 * given up (`signal`: its deadline passed, it cancelled).
 */
async function nextWithin<T>(
  iterator: AsyncIterator<T>,
  ms: number,
  signal: AbortSignal,
): Promise<IteratorResult<T>> {
  let timer: NodeJS.Timeout | undefined;
  let onAbort: (() => void) | undefined;
  const given = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () =>
        reject(
          new ConnectError(
            `no chunk came for ${ms / 1000} s: the load is abandoned and the registry is unchanged. ` +
              'Send the file without pauses (a slow source: save it to a file first), then load it again.',
            Code.DeadlineExceeded,
          ),
        ),
      ms,
    );
    onAbort = () => reject(new ConnectError('the caller gave up; the registry is unchanged', Code.Canceled));
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });
  });
  try {
    return await Promise.race([iterator.next(), given]);
  } finally {
    clearTimeout(timer);
    if (onAbort) signal.removeEventListener('abort', onAbort);
  }
}

/** The end of a load's stream that did not come after its end message. */
const CUT_SHORT =
  'the upload ended before its end message: the file was not sent whole (the uploader cancelled, its ' +
  'deadline passed or its file could not be read; a dnc-admin older than this adapter sends no end: ' +
  'upgrade it). The registry is unchanged.';

/**
 * RegistryAdminService.Load: a header (country, mode), chunks of registry lines, then the end (their line
 * count), committed as one new snapshot (store/registry-load.ts); the index swaps to it at once.
 */
export async function loadSnapshot(
  deps: AdapterDeps,
  requests: AsyncIterable<registryv1.LoadRequest>,
  signal: AbortSignal,
) {
  const { country } = deps;
  const store = deps.store;
  if (!store) {
    throw new ConnectError(
      'this adapter serves a remote registry; there is nothing to load',
      Code.FailedPrecondition,
    );
  }
  const iterator = requests[Symbol.asyncIterator]();
  const first = await iterator.next();
  if (first.done || first.value.part.case !== 'header') {
    throw new ConnectError('the first message must be the header', Code.InvalidArgument);
  }
  const header = first.value.part.value;
  if (header.country !== country) {
    throw new ConnectError(`this adapter serves country ${country}`, Code.InvalidArgument);
  }
  const mode = LOAD_MODES[header.mode];
  if (!mode) throw new ConnectError('mode must be replace, add or remove', Code.InvalidArgument);
  const asOf = header.asOf ? timestampDate(header.asOf) : undefined;
  if (asOf && !(asOf.getTime() <= Date.now() + AS_OF_FUTURE_MS))
    throw new ConnectError('as_of is in the future: when was the registry consulted?', Code.InvalidArgument);
  // Read under the country's load lock: an uploader that stops sending is not waited for without limit.
  // Only a stream ended by the end message, its line count right, is a whole file: a reset stream (the
  // uploader cancelled, its deadline passed) ends on the server as a clean end would.
  async function* chunks(): AsyncGenerator<readonly string[]> {
    let received = 0;
    for (;;) {
      const next = await nextWithin(iterator, deps.loadChunkIdleMs, signal);
      if (next.done) throw new ConnectError(CUT_SHORT, Code.InvalidArgument);
      const part = next.value.part;
      if (part.case === 'end') {
        if (part.value.lines !== BigInt(received)) {
          throw new ConnectError(
            `the end message counts ${part.value.lines} lines, ${received} arrived; the registry is unchanged`,
            Code.InvalidArgument,
          );
        }
        if (!(await nextWithin(iterator, deps.loadChunkIdleMs, signal)).done)
          throw new ConnectError('nothing may follow the end message', Code.InvalidArgument);
        return;
      }
      if (part.case !== 'chunk') {
        throw new ConnectError('only chunks and then the end may follow the header', Code.InvalidArgument);
      }
      received += part.value.lines.length;
      yield part.value.lines;
    }
  }
  const started = Date.now();
  try {
    const result = await loadRegistry(store, deps.normalizer, mode, chunks(), undefined, {
      maxRejected: Number(header.maxRejected),
      allowShrink: header.allowShrink,
      allowOlder: header.allowOlder,
      allowRepeat: header.allowRepeat,
      ...(asOf ? { asOf } : {}),
      signal,
    });
    deps.logger.info(
      {
        mode,
        snapshot_id: result.snapshot.id,
        registry_size: result.snapshot.size,
        lines_read: result.linesRead,
        rejected: result.rejected,
        ms: Date.now() - started,
      },
      result.alreadyApplied
        ? 'registry load already applied; nothing committed'
        : 'registry snapshot committed',
    );
    // Nothing to swap to when the load was already applied.
    if (!result.alreadyApplied) {
      await deps.onSnapshotCommitted?.().catch((error) => {
        deps.logger.warn({ err: error }, 'swap after load failed; the poll retries');
      });
    }
    return {
      snapshotId: result.snapshot.id,
      linesRead: BigInt(result.linesRead),
      accepted: BigInt(result.accepted),
      rejected: BigInt(result.rejected),
      registrySize: BigInt(result.snapshot.size),
      snapshotTime: timestampFromDate(result.snapshot.time),
      alreadyApplied: result.alreadyApplied,
    };
  } catch (error) {
    if (error instanceof LoadRefused) {
      const code =
        error.kind === 'busy'
          ? Code.Aborted
          : error.kind === 'cancelled'
            ? Code.Canceled
            : Code.FailedPrecondition;
      throw new ConnectError(error.message, code);
    }
    throw error;
  }
}
