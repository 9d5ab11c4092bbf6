import { isPhoneWithinLimit } from '@dnc/api-contract/limits';
import type { PoolClient } from '@dnc/kit';
import { difference, KeyBuffer, sortDistinct, union } from '../key-set.js';
import { isRegistryKey, type Normalizer } from '../validation.js';
import { loadDigest, type RegistryStore, type SnapshotInfo } from './registry-store.js';

export type LoadMode = 'replace' | 'add' | 'remove' | 'seed';

export interface LoadResult {
  snapshot: SnapshotInfo;
  linesRead: number;
  accepted: number;
  rejected: number;
  /** The load was the one the current snapshot was made from, again: nothing committed. */
  alreadyApplied: boolean;
}

/** A load that must not be applied; the registry is unchanged. */
export class LoadRefused extends Error {
  constructor(
    message: string,
    readonly kind:
      | 'busy'
      | 'cancelled'
      | 'empty'
      | 'no_as_of'
      | 'no_base'
      | 'older'
      | 'rejected'
      | 'repeat'
      | 'rules'
      | 'shrink',
  ) {
    super(message);
    this.name = 'LoadRefused';
  }
}

/**
 * Lines a registry file may hold that are not numbers: blank lines and `#` comments. A `#` line that
 * reads as a number of the country is not a comment: Check reads `#5512345678` as that number, so such a
 * line skipped unseen would answer a registered subscriber `safe` (found by a review, 2026-12-03). At
 * worst a number inside a real comment is listed: answered `prohibited`, never `safe`.
 */
function isNoise(line: string, normalizer: Normalizer): boolean {
  const t = line.trim();
  if (t === '') return true;
  return t.startsWith('#') && !(isPhoneWithinLimit(line) && isRegistryKey(normalizer.normalize(line)));
}

/** A replace may not halve a registry of at least this many numbers unless the shrink is meant. */
const SHRINK_GUARD_MIN = 10_000;

/** Rejected lines named by number in a refusal. */
const REJECTED_NAMED = 10;

/** The refusal of a load with more rejected lines than allowed: which lines, by number, never their text. */
function rejectedLines(rejected: number, first: number[], allowed: number): LoadRefused {
  const which = `line${first.length > 1 ? 's' : ''} ${first.join(', ')}${rejected > first.length ? ', ...' : ''}`;
  return new LoadRefused(
    `${rejected} line${rejected > 1 ? 's are' : ' is'} not a number of this country (${which}); ` +
      `${allowed} allowed. Such a line may be a registered subscriber written in a form the rules do not read: ` +
      'correct it, or allow the lines with max_rejected (dnc-admin registry load --max-rejected N). ' +
      'The registry is unchanged.',
    'rejected',
  );
}

/** The refusal of a delta on a snapshot built with other numbering rules. */
function otherRules(base: SnapshotInfo, store: RegistryStore): LoadRefused {
  return new LoadRefused(
    `the current registry (snapshot ${base.id}) was built with numbering rules ${base.rules}; this adapter ` +
      `applies ${store.rules} and does not serve it. Load the whole registry with mode replace first. ` +
      'The registry is unchanged.',
    'rules',
  );
}

/**
 * A removal must say when the registry published it (found by a review, 2026-12-05). Without an as_of it
 * has no place in the registry's order: a backlog removal of Jan 15 loaded after the copy consulted on
 * Feb 1 was applied, and a number that left the registry on Jan 15 and registered again before Feb 1 (in
 * that copy) was answered safe. A removal is the only load that makes a number safe; an add or a replace
 * without one is dated by its base or now.
 */
function undatedRemoval(): LoadRefused {
  return new LoadRefused(
    'a removal must give as_of, when the registry published it: without it, it cannot be placed in the ' +
      "registry's order, and an old removal file would answer safe a number registered again since. Load it " +
      'with as_of (dnc-admin registry load --mode remove --as-of ISO-TIME). The registry is unchanged.',
    'no_as_of',
  );
}

/** PostgreSQL's undefined_table. */
const UNDEFINED_TABLE = '42P01';

/**
 * Give the replaces committed before loads were identified (the release before 2026-12-04: their digest
 * NULL) the digest of their numbers, read back from their tables, so that a retry or a re-run crossing the
 * upgrade is known like any other (found by the closing review of 2026-12-04: last month's file, loaded
 * before the upgrade and run again after it, was applied and answered every number registered since
 * safe). A replace's table holds exactly its file's numbers. Once per snapshot, under the load lock; those
 * whose table was dropped (older than the current one and its two predecessors), and deltas (their table
 * is the result, not the file), stay unknown.
 */
async function identifyEarlierLoads(store: RegistryStore, client: PoolClient): Promise<void> {
  for (const snapshot of await store.unidentifiedReplaces(client)) {
    // On a connection of its own. A table that is gone (dropped by a clean-up cut short before its row
    // was updated) leaves its load unknown, as before, rather than refuse every load of the country; any
    // other failure fails the load (retried, it reads the table again), never applies it unchecked.
    const keys = await store.readKeys(snapshot).catch((error: unknown) => {
      if ((error as { code?: string }).code === UNDEFINED_TABLE) return undefined;
      throw error;
    });
    if (keys) await store.identifyReplace(client, snapshot.id, loadDigest('replace', sortDistinct(keys)));
  }
}

/**
 * Where a load stands in the registry's order (found by reviews, 2026-12-03 and 2026-12-04: a retried or
 * replayed delta undid what later ones did, a number added since removed again, answered safe; last
 * month's file loaded again dropped every number registered since and dated the copy anew; an older
 * replace dated the copy back). A load is known by its mode, its numbers and its as_of (`findLoad`; a
 * replace by its numbers whatever its as_of: a registry that changes is another file at its next
 * consultation). 'applied': the load the current snapshot was made from, again with the same as_of (its
 * answer lost; a replace: dated); nothing to commit. Refused unless meant: a replace or removal dated
 * before the current snapshot (`allowOlder`; a removal so applied keeps the copy's time), a replace of
 * numbers loaded before, the current copy's included (`allowOlder`), a removal loaded before and followed
 * by others (`allowRepeat`). An add is applied whatever its order (it keeps the copy's time when older).
 */
async function checkOrder(
  store: RegistryStore,
  client: PoolClient,
  mode: LoadMode,
  fileKeys: Float64Array,
  base: SnapshotInfo | undefined,
  guards: { asOf?: Date; allowOlder?: boolean; allowRepeat?: boolean },
): Promise<'applied' | { digest: string | null; older: boolean }> {
  if (mode === 'seed') return { digest: null, older: false };
  const delta = mode !== 'replace';
  await identifyEarlierLoads(store, client);
  const digest = loadDigest(mode, fileKeys);
  const loaded = await store.findLoad(client, digest, delta ? guards.asOf : 'any');
  const current = loaded !== undefined && loaded.id === base?.id;
  // Already applied only under this release's rules: on a snapshot of other rules, the same load is the
  // upgrade's reload, which builds the keys this release serves (found reading the change once more,
  // 2026-12-04: answered already_applied, no replica of the new rules served the country).
  const ownBase = base !== undefined && store.isOwn(base);
  if (current && ownBase && loaded.asOf?.getTime() === guards.asOf?.getTime() && (delta || guards.asOf))
    return 'applied';
  const what = delta ? 'delta' : 'file';
  const refuse = (kind: 'older' | 'repeat', why: string, effect: string) => {
    const flag = kind === 'older' ? 'allow_older' : 'allow_repeat';
    return new LoadRefused(
      `${why}: ${effect}. If it is meant, load it with ${flag} (dnc-admin registry load ` +
        `--${flag.replace('_', '-')}). The registry is unchanged.`,
      kind,
    );
  };
  const undo =
    'applied, it would undo what came after it (a number added since removed again); loads are applied in ' +
    'order (after an older copy loaded with allow_older, the removals published since are loaded again with allow_repeat)';
  // Dated before the copy it applies to, whatever rules built that copy: across a rules upgrade a file's
  // keys may differ (lines one revision rejects and the next reads), so its digest does not find the
  // loads of the release before and its date is what is left (found by a review, 2026-12-04). The
  // upgrade's reload is dated as the consultation it loads again: not older.
  // Against the latest as_of applied since the copy's replace, a removal's included (a removal does not
  // date the copy, but the removals applied stay in order: found by a review, 2026-12-05).
  const orderTime = base?.orderTime ?? base?.time;
  const older = orderTime !== undefined && guards.asOf !== undefined && guards.asOf < orderTime;
  // An add only ever makes numbers prohibited, never safe: applied out of order or again (the copy keeps
  // its time), rather than leave a late registration answered safe until an operator acts.
  const add = mode === 'add';
  if (older && !guards.allowOlder && !add) {
    const why = `the ${what} is dated ${guards.asOf!.toISOString()}, before the registry it applies to (${orderTime!.toISOString()})`;
    throw refuse('older', why, delta ? undo : 'loaded, it would drop every number registered since');
  }
  if (loaded && !current && !add && !(delta ? guards.allowRepeat : guards.allowOlder)) {
    const why = `this ${what} (the same mode and numbers${delta ? `, ${guards.asOf ? 'the same' : 'any'} as_of` : ''}) was loaded before, as snapshot ${loaded.id}, and other loads came after it`;
    throw refuse(
      delta ? 'repeat' : 'older',
      why,
      delta ? undo : 'loaded, it would drop every number registered since',
    );
  }
  if (current && !delta && !guards.allowOlder) {
    // The current copy's file again with another as_of (or none: now): it would date the copy anew.
    const why = `this file holds the same numbers as the current registry (snapshot ${loaded.id}${loaded.asOf ? `, as of ${loaded.asOf.toISOString()}` : ''})`;
    throw refuse(
      'older',
      why,
      'loaded, it would date the copy anew with no new consultation (a registry that changes is another file at its next one; if it really is unchanged, this is meant)',
    );
  }
  return { digest, older };
}

/** Read a file's lines into its keys (sorted, distinct), counting the lines the normalizer rejects. */
async function readKeys(
  chunks: AsyncIterable<readonly string[]>,
  normalizer: Normalizer,
  onProgress?: (linesRead: number) => void,
) {
  const buffer = new KeyBuffer();
  let linesRead = 0;
  let rejected = 0;
  let lineNumber = 0;
  const firstRejected: number[] = [];
  let nextProgress = 1_000_000;
  for await (const chunk of chunks) {
    for (const line of chunk) {
      lineNumber++;
      if (isNoise(line, normalizer)) continue;
      linesRead++;
      const key = isPhoneWithinLimit(line) ? normalizer.normalize(line) : 0;
      if (isRegistryKey(key)) buffer.push(key);
      else if (++rejected <= REJECTED_NAMED) firstRejected.push(lineNumber);
    }
    if (onProgress && linesRead >= nextProgress) {
      onProgress(linesRead);
      nextProgress += 1_000_000;
    }
  }
  return { fileKeys: buffer.takeSortedDistinct(), linesRead, rejected, firstRejected };
}

/**
 * A replace or a removal that would leave less than half of a large registry is refused unless the
 * shrink is meant: a file cut short, or the whole registry loaded with mode remove (a delta command reused
 * for the month's full export, found by a review, 2026-12-03: it left the numbers that had left the
 * registry, and answered safe for every other one).
 */
function refuseShrink(mode: LoadMode, keys: Float64Array, base: SnapshotInfo): void {
  if (base.size < SHRINK_GUARD_MIN || keys.length * 2 >= base.size) return;
  const what =
    mode === 'replace'
      ? `the file holds ${keys.length} numbers against ${base.size} in the registry: less than half, as a file cut short would`
      : `the removal would leave ${keys.length} of the registry's ${base.size} numbers: less than half, as a whole registry loaded with mode remove would`;
  throw new LoadRefused(
    `${what}. Check the file and the mode; if the shrink is meant, load it with allow_shrink ` +
      '(dnc-admin registry load --allow-shrink). The registry is unchanged.',
    'shrink',
  );
}

/**
 * Load a registry file (an async sequence of chunks of lines) into a new snapshot. Every line goes
 * through the SAME normalizer as Check, so every written form of a listed line is found later. Lines it
 * rejects are counted; a replace or add with more than `maxRejected` of them is refused (a removal never:
 * its rejected lines remove nothing); a replace that would halve a large registry is refused unless
 * `allowShrink` (a file cut short). Memory: the keys live in Float64Arrays (8 bytes per number, plus the base
 * snapshot for add/remove), never in a JS array or Set, so 10,000,000 lines fit.
 *
 * - replace: the file becomes the whole registry;
 * - add / remove: a new snapshot from the current one (none: empty) plus / minus the file's numbers, as of
 *   the current one's time unless `asOf` says when the registry published an add (a removal keeps the
 *   copy's time: it brings no registration). A removal without `asOf` is refused (`undatedRemoval`):
 *   only a dated one can be put in order.
 * A load whose result is an empty registry is refused: it would answer `safe` for everyone. The snapshot is
 * stamped with the store's numbering rules; an add or remove on a snapshot of other rules is refused.
 *
 * Order (`checkOrder`): a retried load is answered as already applied; one out of order is refused
 * unless `allowOlder` / `allowRepeat`.
 */
export async function loadRegistry(
  store: RegistryStore,
  normalizer: Normalizer,
  mode: LoadMode,
  chunks: AsyncIterable<readonly string[]>,
  onProgress?: (linesRead: number) => void,
  guards: {
    maxRejected: number;
    allowShrink: boolean;
    asOf?: Date;
    allowOlder?: boolean;
    allowRepeat?: boolean;
    /** The load's caller: once it has given up (cancelled, its deadline passed), nothing is committed. */
    signal?: AbortSignal;
  } = {
    maxRejected: Number.POSITIVE_INFINITY,
    allowShrink: true,
  },
): Promise<LoadResult> {
  const { maxRejected, allowShrink } = guards;
  if (mode === 'remove' && !guards.asOf) throw undatedRemoval();
  // A caller that gave up would take the load for failed while the registry had changed: checked once the
  // file is read, before the snapshot is written, and last before its COMMIT.
  const refuseIfGivenUp = () => {
    if (guards.signal?.aborted)
      throw new LoadRefused('the caller gave up before the commit; the registry is unchanged', 'cancelled');
  };
  const result = await store.withLoadLock(async (client) => {
    const current = await store.current(client);
    const base = current && {
      ...current,
      orderTime: (await store.orderTime(client, current.id)) ?? current.time,
    };
    // A seed only ever creates the first snapshot (another replica may have seeded already), or replaces
    // one built with other numbering rules, which no replica of this release serves.
    if (mode === 'seed' && base && store.isOwn(base))
      return { snapshot: base, linesRead: 0, accepted: 0, rejected: 0, alreadyApplied: false };
    const delta = mode === 'add' || mode === 'remove';
    // A delta on keys built by other rules would mix two readings of the same numbers in one snapshot.
    if (delta && base && !store.isOwn(base)) throw otherRules(base, store);
    const { fileKeys, linesRead, rejected, firstRejected } = await readKeys(chunks, normalizer, onProgress);
    refuseIfGivenUp();
    if (rejected > maxRejected && mode !== 'remove')
      throw rejectedLines(rejected, firstRejected, maxRejected);
    const accepted = linesRead - rejected;
    const order = await checkOrder(store, client, mode, fileKeys, base, guards);
    if (order === 'applied') return { snapshot: base!, linesRead, accepted, rejected, alreadyApplied: true };
    let keys: Float64Array;
    if (mode === 'replace' || mode === 'seed') {
      keys = fileKeys;
    } else if (!base) {
      if (mode === 'remove') throw new LoadRefused('there is no registry yet: nothing to remove', 'no_base');
      keys = fileKeys;
    } else {
      const baseKeys = sortDistinct(await store.readKeys(base, client));
      keys = mode === 'add' ? union(baseKeys, fileKeys) : difference(baseKeys, fileKeys);
    }
    if (keys.length === 0) {
      // An empty registry answers `safe` for everyone: never the result of a file with no valid line
      // or of a removal of everything. (A country with a truly empty registry is not a case to serve.)
      throw new LoadRefused('the result would be an empty registry; the registry is unchanged', 'empty');
    }
    if ((mode === 'replace' || mode === 'remove') && base && !allowShrink) refuseShrink(mode, keys, base);
    // A delta without its own as_of keeps its base's: it does not make the rest of the copy fresher; nor
    // does one dated before it (allowed older), nor a removal (found by a review, 2026-12-05): it holds no
    // registration made since the copy, so the copy is as old as before, whatever its date says.
    // An add dated after the copy's time dates it (its registrations reach that day); checked against the
    // copy's time, not the order's (a removal dated later must not stop a later add from dating it).
    const datesCopy = mode === 'add' && guards.asOf !== undefined && (!base || guards.asOf > base.time);
    const asOf = delta && base && !datesCopy ? base.time : (guards.asOf ?? null);
    // The loads since the replace stay in order against the latest as_of among them, whatever their mode.
    const baseOrder = base?.orderTime ?? base?.time;
    const orderAsOf =
      delta && baseOrder ? (guards.asOf && guards.asOf > baseOrder ? guards.asOf : baseOrder) : null;
    const stats = {
      mode,
      linesRead,
      accepted,
      rejected,
      asOf,
      loadDigest: order.digest,
      loadAsOf: guards.asOf ?? null,
      orderAsOf,
    };
    refuseIfGivenUp();
    const snapshot = await store.commitSnapshot(client, keys, stats, base, refuseIfGivenUp);
    await store.dropOldSnapshots(client, snapshot.id).catch(() => 0);
    return { snapshot, linesRead, accepted, rejected, alreadyApplied: false };
  });
  if (!result)
    throw new LoadRefused('another load of this registry is running; try again when it ends', 'busy');
  return result;
}
