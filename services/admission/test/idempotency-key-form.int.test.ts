import { createHash } from 'node:crypto';
import { checkInvariants, DEV_IDEMPOTENCY_KEY_SECRET, formatViolations } from '@dnc/devstack';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { idempotencyKeyMac } from '../src/domain/idempotency.js';
import { type AdmissionClients, admitReq, fingerprint, outcome, startedHarness } from './harness.js';

// Spec, Idempotency 4: "Only a keyed non-reversible fingerprint is retained". Releases before this one
// stored the Idempotency-Key's plain SHA-256, which anyone holding the table reverses for keys built
// from a phone number by trying every number. Records now name the key by an HMAC under admission's
// DNC_IDEMPOTENCY_KEY_SECRET; an upgrade rolls out the `transition` form first (docs/deploy.md).

const h = startedHarness();
/** Instance 0 writes the `keyed` form (the default); this one the `transition` form. */
let transition: AdmissionClients;

beforeAll(async () => {
  transition = await h.addInstance({ DNC_IDEMPOTENCY_KEY_FORM: 'transition' });
});

afterEach(async () => {
  const violations = await checkInvariants({ databaseUrl: h.databaseUrl }, { settleMs: 5_000 });
  expect(violations, formatViolations(violations)).toEqual([]);
});

const sha256 = (key: string) => createHash('sha256').update(key, 'utf8').digest();
const mac = (key: string) => idempotencyKeyMac(DEV_IDEMPOTENCY_KEY_SECRET, key);

/** Every record of API key `keyId`, as stored. */
async function recordsOf(keyId: string) {
  const r = await h.sql(
    `SELECT key_hash, key_mac, fingerprint, state, admission_id::text AS admission_id
     FROM admission.idempotency_records WHERE key_id = $1 ORDER BY created_at`,
    [keyId],
  );
  return r.rows as { key_hash: Buffer; key_mac: Buffer | null; fingerprint: string; state: string }[];
}

describe('an Idempotency-Key is retained only as a keyed MAC', () => {
  it('keyed form: neither the key nor its plain hash is stored; the exact retry replays, charged once', async () => {
    const { admission } = h.clients();
    const c = await h.customer();
    // A key a client built from a phone number: its plain SHA-256 would give the number back.
    const key = 'lead-+525512345678';
    const req = admitReq(c, { idempotencyKey: key, inputCount: 3 });
    const first = await admission.admit(req);
    await admission.complete({ admissionId: first.admissionId });

    const rows = await recordsOf(c.keyId);
    expect(rows).toHaveLength(1);
    const [row] = rows;
    expect(row!.key_mac?.equals(mac(key))).toBe(true);
    expect(row!.key_hash.equals(mac(key))).toBe(true);
    const stored = JSON.stringify(rows, (_, v) =>
      v?.type === 'Buffer' ? Buffer.from(v.data).toString('hex') : v,
    );
    expect(stored).not.toContain(sha256(key).toString('hex'));
    expect(stored).not.toContain('5512345678');

    const replay = await admission.admit(req);
    expect(replay.replay).toBe(true);
    expect(await outcome(admission.admit({ ...req, fingerprint: fingerprint('other phones') }))).toBe(
      'idempotency_key_reused',
    );
    expect(await h.account(c.orgId, 'mx')).toMatchObject({ used: 3, reserved: 0 });
  });

  it("a record an older release wrote (plain hash only) is still the key's: replayed, reused, never claimed again", async () => {
    const { admission } = h.clients();
    const c = await h.customer();
    const req = admitReq(c, { inputCount: 4 });
    // What a release before this one left, before the upgrade: the transition form without its MAC.
    const first = await transition.admission.admit(req);
    await transition.admission.complete({ admissionId: first.admissionId });
    await h.sql(
      `UPDATE admission.idempotency_records SET key_mac = NULL, created_at = now() - interval '1 hour'
       WHERE key_id = $1`,
      [c.keyId],
    );
    expect((await recordsOf(c.keyId))[0]!.key_hash.equals(sha256(req.idempotencyKey))).toBe(true);
    // The keyed process looks again (every 30 s): a record without a MAC is kept, so the plain hash is
    // looked up again (none was when it started, and it sent none).
    expect(await h.instances[0]!.keyForm.check()).toBe('keyed');

    const replay = await admission.admit(req);
    expect(replay).toMatchObject({ replay: true, admissionId: first.admissionId });
    expect(await outcome(admission.admit({ ...req, fingerprint: fingerprint('other phones') }))).toBe(
      'idempotency_key_reused',
    );
    expect(await recordsOf(c.keyId)).toHaveLength(1);
    expect(await h.account(c.orgId, 'mx')).toMatchObject({ used: 4, reserved: 0 });
  });

  it('transition form: keeps the plain hash beside the MAC, so pods of the older release see the claim', async () => {
    const c = await h.customer();
    const req = admitReq(c, { inputCount: 2 });
    const first = await transition.admission.admit(req);
    const [row] = await recordsOf(c.keyId);
    expect(row!.key_hash.equals(sha256(req.idempotencyKey))).toBe(true);
    expect(row!.key_mac?.equals(mac(req.idempotencyKey))).toBe(true);
    // An older release's claim of the same key (its INSERT, on its primary key) finds it taken.
    const older = await h.sql(
      `INSERT INTO admission.idempotency_records (key_id, key_hash, fingerprint, kind, state, admission_id)
       VALUES ($1, $2, $3, 1, 'in_progress', gen_random_uuid()) ON CONFLICT (key_id, key_hash) DO NOTHING`,
      [c.keyId, sha256(req.idempotencyKey), req.fingerprint],
    );
    expect(older.rowCount).toBe(0);
    // A keyed pod retrying it: the original is still in progress.
    expect(await outcome(h.clients().admission.admit(req))).toBe('idempotency_request_in_progress');
    await transition.admission.complete({ admissionId: first.admissionId });
    expect((await h.clients().admission.admit(req)).replay).toBe(true);
    expect(await h.account(c.orgId, 'mx')).toMatchObject({ used: 2, reserved: 0 });
  });

  it('keyed is configured, but a pod of an older release wrote lately: claims keep the plain hash until it stops', async () => {
    const guard = h.instances[0]!.keyForm;
    expect(await guard.check()).toBe('keyed');
    const c = await h.customer();
    // An older release's pod takes a request now (its claim: plain hash, no MAC).
    const older = admitReq(c, { inputCount: 1 });
    await h.sql(
      `INSERT INTO admission.idempotency_records (key_id, key_hash, fingerprint, kind, state, admission_id)
       VALUES ($1, $2, $3, 1, 'completed', gen_random_uuid())`,
      [c.keyId, sha256(older.idempotencyKey), older.fingerprint],
    );
    try {
      expect(await guard.check()).toBe('transition');
      const req = admitReq(c, { inputCount: 2 });
      const first = await h.clients().admission.admit(req);
      await h.clients().admission.complete({ admissionId: first.admissionId });
      const mine = (await recordsOf(c.keyId)).find((r) => r.fingerprint === req.fingerprint)!;
      expect(mine.key_hash.equals(sha256(req.idempotencyKey))).toBe(true);
      expect(mine.key_mac?.equals(mac(req.idempotencyKey))).toBe(true);

      // Ten minutes without a write from it: keyed only again.
      await h.sql(
        `UPDATE admission.idempotency_records SET created_at = now() - interval '601 seconds'
         WHERE key_id = $1 AND key_mac IS NULL`,
        [c.keyId],
      );
      expect(await guard.check()).toBe('keyed');
      const next = admitReq(c, { inputCount: 3 });
      const second = await h.clients().admission.admit(next);
      await h.clients().admission.complete({ admissionId: second.admissionId });
      const keyed = (await recordsOf(c.keyId)).find((r) => r.fingerprint === next.fingerprint)!;
      expect(keyed.key_hash.equals(mac(next.idempotencyKey))).toBe(true);
    } finally {
      // The stand-in for the older release's record is not the platform's: no usage record stands behind it.
      await h.sql('DELETE FROM admission.idempotency_records WHERE key_id = $1 AND key_mac IS NULL', [
        c.keyId,
      ]);
      await guard.check();
    }
    expect(await h.account(c.orgId, 'mx')).toMatchObject({ used: 5, reserved: 0 });
  });

  it("a keyed claim made while a transition pod's claim of the key is not yet committed: it waits, and loses", async () => {
    const c = await h.customer();
    const req = admitReq(c, { inputCount: 5 });
    // The transition pod's INSERT holds its transaction open 400 ms once its row is written: the keyed
    // pod's NOT EXISTS cannot see that row, so only the unique key_mac index can stop a second claim.
    await h.sql(`CREATE FUNCTION admission.slow_transition_claim() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN IF NEW.key_hash <> NEW.key_mac THEN PERFORM pg_sleep(0.4); END IF; RETURN NULL; END $$`);
    await h.sql(`CREATE TRIGGER slow_transition_claim AFTER INSERT ON admission.idempotency_records
      FOR EACH ROW EXECUTE FUNCTION admission.slow_transition_claim()`);
    try {
      const first = transition.admission.admit(req);
      await new Promise((r) => setTimeout(r, 150));
      const second = await outcome(h.clients().admission.admit(req));
      const won = await first;
      expect(won.replay).toBe(false);
      expect(second).toBe('idempotency_request_in_progress');
      await transition.admission.complete({ admissionId: won.admissionId });
    } finally {
      await h.sql('DROP TRIGGER slow_transition_claim ON admission.idempotency_records');
      await h.sql('DROP FUNCTION admission.slow_transition_claim()');
    }
    expect(await recordsOf(c.keyId)).toHaveLength(1);
    expect(await h.account(c.orgId, 'mx')).toMatchObject({ used: 5, reserved: 0 });
  });

  it('a transition pod and a keyed pod claiming the same key at once: exactly one admission', async () => {
    const c = await h.customer();
    const rounds = 10;
    let admitted = 0;
    for (let i = 0; i < rounds; i++) {
      const req = admitReq(c, { inputCount: 1 });
      // Each side twice, so the claims meet in one batched INSERT as well as across the two pods.
      const answers = await Promise.allSettled([
        transition.admission.admit(req),
        h.clients().admission.admit(req),
        transition.admission.admit(req),
        h.clients().admission.admit(req),
      ]);
      const winners = answers.filter((a) => a.status === 'fulfilled' && !a.value.replay);
      expect(winners).toHaveLength(1);
      for (const a of answers) {
        if (a.status === 'rejected')
          expect(await outcome(Promise.reject(a.reason))).toBe('idempotency_request_in_progress');
      }
      const winner = winners[0] as PromiseFulfilledResult<{ admissionId: string }>;
      await h.clients().admission.complete({ admissionId: winner.value.admissionId });
      admitted += 1;
    }
    expect(await recordsOf(c.keyId)).toHaveLength(rounds);
    expect(await h.account(c.orgId, 'mx')).toMatchObject({ used: admitted, reserved: 0 });
  });
});

// Found by a review (2026-12-05): a process with another DNC_IDEMPOTENCY_KEY_SECRET (a Secret recreated with
// a fresh random value) found none of the records, and admitted and charged every exact retry again.
describe('a process started with another idempotency key secret', () => {
  it('refuses to start, naming neither secret; started deliberately once the check is removed', async () => {
    const other = 'another-idempotency-key-secret';
    const refused = await h.addInstance({ DNC_IDEMPOTENCY_KEY_SECRET: other }).then(
      () => undefined,
      (error: Error) => error,
    );
    expect(refused?.message).toMatch(/DNC_IDEMPOTENCY_KEY_SECRET is not the secret/);
    expect(refused?.message).not.toContain(other);
    expect(refused?.message).not.toContain(DEV_IDEMPOTENCY_KEY_SECRET);
    // The same secret starts (the transition instance did, after the first had recorded it).
    expect(transition).toBeDefined();
    // Changing it on purpose (docs/deploy.md): the recorded check goes, and the next start records its own.
    await h.sql('DELETE FROM admission.idempotency_key_check');
    const changed = await h.addInstance({ DNC_IDEMPOTENCY_KEY_SECRET: other });
    const c = await h.customer();
    const req = admitReq(c, { inputCount: 1 });
    const first = await changed.admission.admit(req);
    await changed.admission.complete({ admissionId: first.admissionId });
    expect((await recordsOf(c.keyId))[0]!.key_mac?.equals(idempotencyKeyMac(other, req.idempotencyKey))).toBe(
      true,
    );
  });
});
