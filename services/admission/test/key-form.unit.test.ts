import { createLogger, Registry } from '@dnc/kit';
import { describe, expect, it } from 'vitest';
import { KeyFormGuard, OLDER_RELEASE_WINDOW_SECONDS } from '../src/key-form.js';
import type { ClaimStore, KeyForm } from '../src/store/index.js';

/** A claim store whose records without a MAC are `seen` (or whose look fails), noting the form it is given. */
function store(seen: { any: boolean; recent: boolean } | Error) {
  const used: { form: KeyForm; plainHashLookups: boolean }[] = [];
  const windows: number[] = [];
  const claims = {
    useForm: (form: KeyForm, plainHashLookups: boolean) => used.push({ form, plainHashLookups }),
    recordsWithoutMac: async (seconds: number) => {
      windows.push(seconds);
      if (seen instanceof Error) throw seen;
      return seen;
    },
  };
  return { claims: claims as unknown as ClaimStore, used, windows, set: (s: typeof seen) => (seen = s) };
}

async function guardOver(configured: KeyForm, seen: Parameters<typeof store>[0]) {
  const s = store(seen);
  const metrics = new Registry();
  const clock = { ms: 1_000_000 };
  const guard = new KeyFormGuard(
    s.claims,
    createLogger('test', 'silent'),
    configured,
    30_000,
    metrics,
    () => clock.ms,
  );
  const gauge = async () =>
    Object.fromEntries(
      (await metrics.getSingleMetric('dnc_idempotency_key_form')!.get()).values.map((v) => [
        v.labels['form'],
        v.value,
      ]),
    );
  const olderWriting = async () =>
    (await metrics.getSingleMetric('dnc_idempotency_older_release_writing')!.get()).values[0]?.value;
  return { guard, ...s, gauge, olderWriting, clock };
}

describe('the form of new idempotency claims (key-form.ts)', () => {
  it('before its first look: the transition form, the plain hash looked up', async () => {
    const { used, gauge } = await guardOver('keyed', { any: false, recent: false });
    expect(used).toEqual([{ form: 'transition', plainHashLookups: true }]);
    expect(await gauge()).toEqual({ keyed: 0, transition: 1 });
  });

  it('keyed, no record without a MAC: keyed, and the plain hash is sent nowhere', async () => {
    const { guard, used, windows, gauge } = await guardOver('keyed', { any: false, recent: false });
    expect(await guard.check()).toBe('keyed');
    expect(used.at(-1)).toEqual({ form: 'keyed', plainHashLookups: false });
    expect(windows).toEqual([OLDER_RELEASE_WINDOW_SECONDS]);
    expect(await gauge()).toEqual({ keyed: 1, transition: 0 });
  });

  it("keyed, an older release's records still kept but none lately: keyed, still looked up by the plain hash", async () => {
    const { guard, used } = await guardOver('keyed', { any: true, recent: false });
    expect(await guard.check()).toBe('keyed');
    expect(used.at(-1)).toEqual({ form: 'keyed', plainHashLookups: true });
  });

  it('keyed, but an older release wrote lately: the transition form until it stops, and said so', async () => {
    const { guard, used, set, olderWriting } = await guardOver('keyed', { any: true, recent: true });
    expect(await guard.check()).toBe('transition');
    expect(used.at(-1)).toEqual({ form: 'transition', plainHashLookups: true });
    expect(await olderWriting()).toBe(1);
    set({ any: true, recent: false });
    expect(await guard.check()).toBe('keyed');
    expect(await olderWriting()).toBe(0);
  });

  it('a look that fails keeps what the last one decided, for half the window; then the transition form', async () => {
    const { guard, used, set, clock } = await guardOver('keyed', { any: false, recent: false });
    expect(await guard.check()).toBe('keyed');
    set(new Error('connection refused'));
    clock.ms += 290_000;
    expect(await guard.check()).toBe('keyed');
    // Still keyed, but blind to records written since: looked up by the plain hash too.
    expect(used.at(-1)).toEqual({ form: 'keyed', plainHashLookups: true });
    clock.ms += 20_000; // 310 s without a look that succeeded
    expect(await guard.check()).toBe('transition');
    expect(used.at(-1)).toEqual({ form: 'transition', plainHashLookups: true });
    set({ any: false, recent: false });
    expect(await guard.check()).toBe('keyed');
  });

  it('a first look that fails: the transition form (nothing decided yet)', async () => {
    const { guard, used } = await guardOver('keyed', new Error('connection refused'));
    expect(await guard.check()).toBe('transition');
    expect(used.at(-1)).toEqual({ form: 'transition', plainHashLookups: true });
  });

  it('configured transition: always the transition form; an older release writing is expected then', async () => {
    const { guard, used, olderWriting } = await guardOver('transition', { any: true, recent: true });
    expect(await guard.check()).toBe('transition');
    expect(used.every((u) => u.form === 'transition' && u.plainHashLookups)).toBe(true);
    expect(await olderWriting()).toBe(0);
  });

  it('concurrent checks share one look', async () => {
    const { guard, windows } = await guardOver('keyed', { any: false, recent: false });
    await Promise.all([guard.check(), guard.check(), guard.check()]);
    expect(windows).toHaveLength(1);
  });
});
