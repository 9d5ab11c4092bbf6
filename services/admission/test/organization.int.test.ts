import { randomUUID } from 'node:crypto';
import { timestampDate } from '@bufbuild/protobuf/wkt';
import { createClient } from '@connectrpc/connect';
import { admissionv1 } from '@dnc/proto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_ACTIVE_KEYS, MAX_KEY_NAME } from '../src/organization.js';
import { REVOKED_KEYS_LISTED } from '../src/organization-store.js';
import { Harness, outcome } from './harness.js';

// Issue 16: the organization-scoped methods the dashboard calls. The organization always comes from the
// caller; a row of another organization answers exactly like a missing id.
const h = new Harness();
let org: ReturnType<typeof createClient<typeof admissionv1.OrganizationService>>;

beforeAll(async () => {
  await h.start({ DNC_KEY_USAGE_FLUSH_MS: '200' });
  await h.adapter('co');
  org = createClient(admissionv1.OrganizationService, h.transport(await h.pki.security('dashboard')));
});

afterAll(async () => {
  await h.stop();
});

describe('OrganizationService keys', () => {
  it('creates a named key whose secret authenticates, lists it without the secret, notes its last use, revokes it', async () => {
    const { orgId } = await h.customer(['co']);
    const created = await org.createKey({ orgId, name: '  production  ' });
    expect(created.key).toMatchObject({ name: 'production' });
    expect(created.apiKey).toMatch(/^dnc_[0-9a-f]{12}_/);
    expect(created.apiKey.startsWith(created.key!.prefix)).toBe(true);
    expect(created.key!.lastUsedAt).toBeUndefined();

    const listed = await org.listKeys({ orgId });
    expect(listed.keys.map((k) => k.keyId)).toContain(created.key!.keyId);
    expect(JSON.stringify(listed.keys, (_k, v) => (typeof v === 'bigint' ? Number(v) : v))).not.toContain(
      created.apiKey.slice(17),
    );

    const auth = await h
      .clients()
      .admission.authenticate({ apiKey: created.apiKey, clientAddress: '10.0.0.1' });
    expect(auth.keyId).toBe(created.key!.keyId);
    await expect
      .poll(
        async () => (await org.listKeys({ orgId })).keys.find((k) => k.keyId === auth.keyId)?.lastUsedAt,
        {
          timeout: 5000,
        },
      )
      .toBeDefined();

    const revoked = await org.revokeKey({ orgId, keyId: created.key!.keyId });
    expect(revoked.key!.revokedAt).toBeDefined();
    expect(revoked.revokedNow).toBe(true);
    expect(
      await outcome(
        h.clients().admission.authenticate({ apiKey: created.apiKey, clientAddress: '10.0.0.1' }),
      ),
    ).toBe('invalid_key');
    // Again: no change, same revocation time.
    const again = await org.revokeKey({ orgId, keyId: created.key!.keyId });
    expect(timestampDate(again.key!.revokedAt!)).toEqual(timestampDate(revoked.key!.revokedAt!));
    expect(again.revokedNow).toBe(false);
  });

  // Found by a review of internal trust (2026-12-03): the dashboard's identity may create a key for any
  // organization it names, and nothing but its own (the organization's) audit log recorded it. Admission's
  // append-only log now has every creation and revocation, with the caller and never the secret.
  it("every key created or revoked is in admission's audit log: caller, organization, key, never the secret", async () => {
    const { orgId } = await h.customer(['co']);
    const created = await org.createKey({ orgId, name: 'audited' });
    await org.revokeKey({ orgId, keyId: created.key!.keyId });
    const rows = (
      await h.sql(
        `SELECT caller, method, targets, outcome FROM admission.audit_log
         WHERE targets->>'org_id' = $1 AND caller = 'dashboard' ORDER BY id`,
        [orgId],
      )
    ).rows;
    expect(rows.map((r) => [r.caller, r.method.split('/')[1], r.outcome])).toEqual([
      ['dashboard', 'CreateKey', 'started'],
      ['dashboard', 'CreateKey', 'ok'],
      ['dashboard', 'RevokeKey', 'started'],
      ['dashboard', 'RevokeKey', 'ok'],
    ]);
    expect(rows[2].targets.key_id).toBe(created.key!.keyId);
    expect(JSON.stringify(rows)).not.toContain(created.apiKey.slice(17));
    // Reads are not administration: ListKeys writes nothing.
    await org.listKeys({ orgId });
    expect(
      (
        await h.sql(
          `SELECT count(*)::int AS n FROM admission.audit_log
           WHERE targets->>'org_id' = $1 AND caller = 'dashboard'`,
          [orgId],
        )
      ).rows[0].n,
    ).toBe(4);
  });

  it('of concurrent revocations of one key exactly one revoked it; all answer the same time', async () => {
    const { orgId } = await h.customer(['co']);
    for (let round = 0; round < 5; round++) {
      const created = await org.createKey({ orgId, name: `raced ${round}` });
      const answers = await Promise.all(
        Array.from({ length: 6 }, () => org.revokeKey({ orgId, keyId: created.key!.keyId })),
      );
      expect(answers.filter((a) => a.revokedNow)).toHaveLength(1);
      expect(new Set(answers.map((a) => timestampDate(a.key!.revokedAt!).getTime())).size).toBe(1);
    }
  });

  it('another organization cannot list, revoke or see a key: not_found, as for a missing id', async () => {
    const a = await h.customer(['co']);
    const b = await h.customer(['co']);
    const bKey = await org.createKey({ orgId: b.orgId, name: 'b' });
    expect(await outcome(org.revokeKey({ orgId: a.orgId, keyId: bKey.key!.keyId }))).toBe('not_found');
    expect(await outcome(org.revokeKey({ orgId: a.orgId, keyId: randomUUID() }))).toBe('not_found');
    expect(await outcome(org.revokeKey({ orgId: a.orgId, keyId: 'not-a-uuid' }))).toBe('not_found');
    expect((await org.listKeys({ orgId: a.orgId })).keys.map((k) => k.keyId)).not.toContain(bKey.key!.keyId);
    // B's key still works.
    const auth = await h.clients().admission.authenticate({ apiKey: bKey.apiKey, clientAddress: '10.0.0.2' });
    expect(auth.orgId).toBe(b.orgId);
    expect(await outcome(org.getOrganization({ orgId: randomUUID() }))).toBe('not_found');
    expect(await outcome(org.createKey({ orgId: randomUUID(), name: 'x' }))).toBe('not_found');
  });

  it(`names: ${MAX_KEY_NAME} characters pass, one more or a control character is refused`, async () => {
    const { orgId } = await h.customer([]);
    expect(await outcome(org.createKey({ orgId, name: 'n'.repeat(MAX_KEY_NAME) }))).toBe('ok');
    expect(await outcome(org.createKey({ orgId, name: 'n'.repeat(MAX_KEY_NAME + 1) }))).toBe(
      'validation_error',
    );
    expect(await outcome(org.createKey({ orgId, name: '   ' }))).toBe('validation_error');
    expect(await outcome(org.createKey({ orgId, name: 'a\nb' }))).toBe('validation_error');
  });

  it(`an organization holds at most ${MAX_ACTIVE_KEYS} active keys; revoking one makes room`, async () => {
    const { orgId } = await h.customer([]); // one key from the operator already
    const made = [];
    for (let i = 1; i < MAX_ACTIVE_KEYS; i++) made.push(await org.createKey({ orgId, name: `k${i}` }));
    expect(await outcome(org.createKey({ orgId, name: 'one too many' }))).toBe('conflict');
    await org.revokeKey({ orgId, keyId: made[0]!.key!.keyId });
    expect(await outcome(org.createKey({ orgId, name: 'fits again' }))).toBe('ok');
  });

  it('concurrent creations never pass the limit', async () => {
    const { orgId } = await h.customer([]);
    const results = await Promise.all(
      Array.from({ length: MAX_ACTIVE_KEYS + 5 }, (_, i) => outcome(org.createKey({ orgId, name: `c${i}` }))),
    );
    expect(results.filter((r) => r === 'ok')).toHaveLength(MAX_ACTIVE_KEYS - 1);
    expect((await org.listKeys({ orgId })).keys.filter((k) => !k.revokedAt)).toHaveLength(MAX_ACTIVE_KEYS);
  });
  it(`lists every active key and the ${REVOKED_KEYS_LISTED} most recently revoked, however many were revoked`, async () => {
    // Found by a review of resource bounds (2026-12-03): revoked keys are kept and nothing bounds how many
    // an organization makes over time (create and revoke in a loop); the listing answered all of them.
    const { orgId } = await h.customer([]); // one active key from the operator
    const kept = await org.createKey({ orgId, name: 'kept' });
    await h.sql(
      `INSERT INTO admission.api_keys (key_id, org_id, name, public_id, digest, created_at, revoked_at)
       SELECT gen_random_uuid(), $1, 'revoked ' || i, 'r' || replace(gen_random_uuid()::text, '-', ''), '\\x00',
              now() - interval '1 day' - i * interval '1 second', now() - i * interval '1 second'
       FROM generate_series(1, $2::int) AS i`,
      [orgId, REVOKED_KEYS_LISTED + 50],
    );
    const { keys } = await org.listKeys({ orgId });
    const active = keys.filter((k) => !k.revokedAt);
    const revoked = keys.filter((k) => k.revokedAt);
    expect(active).toHaveLength(2);
    expect(active.map((k) => k.keyId)).toContain(kept.key!.keyId);
    expect(revoked).toHaveLength(REVOKED_KEYS_LISTED);
    // The latest revoked: 'revoked 1' .. 'revoked 100', not the 50 revoked before them.
    expect(new Set(revoked.map((k) => k.name))).toEqual(
      new Set(Array.from({ length: REVOKED_KEYS_LISTED }, (_, i) => `revoked ${i + 1}`)),
    );
    // Newest first, as before.
    const created = keys.map((k) => timestampDate(k.createdAt!).getTime());
    expect(created).toEqual([...created].sort((a, b) => b - a));
  });
});

describe('OrganizationService plan', () => {
  it('lists purchases with their stage: pending payment, activation pending, active, lapsed', async () => {
    const { admin } = h.clients();
    const { orgId } = await admin.createOrganization({ name: 'Plan Org' });
    const mx = (await admin.createPurchase({ orgId, country: 'mx' })).purchase!;
    const ar = (await admin.createPurchase({ orgId, country: 'ar' })).purchase!;
    const co = (await admin.createPurchase({ orgId, country: 'co' })).purchase!;
    await admin.payPurchase({ purchaseId: ar.purchaseId });
    await admin.payPurchase({ purchaseId: co.purchaseId }); // co: activated at payment
    const stages = async () =>
      Object.fromEntries((await org.listPurchases({ orgId })).purchases.map((p) => [p.country, p.stage]));
    const S = admissionv1.PurchaseStage;
    expect(await stages()).toEqual({ mx: S.PENDING_PAYMENT, ar: S.ACTIVATION_PENDING, co: S.ACTIVE });
    await admin.lapsePurchase({ purchaseId: mx.purchaseId });
    expect((await stages())['mx']).toBe(S.LAPSED);
    const other = await admin.createOrganization({ name: 'Other' });
    expect((await org.listPurchases({ orgId: other.orgId })).purchases).toEqual([]);
  });

  it('the catalog: mx, ar, co live; es, au, sg planned for 2026-09; announced maintenance windows', async () => {
    const until = new Date(Date.now() + 3_600_000);
    const { admin } = h.clients();
    await admin.setMaintenance({
      country: 'ar',
      until: { seconds: BigInt(Math.floor(until.getTime() / 1000)), nanos: 0 },
    });
    const { countries } = await org.getCatalog({});
    const byCode = Object.fromEntries(countries.map((c) => [c.country, c]));
    expect(Object.keys(byCode)).toEqual(['mx', 'ar', 'co', 'es', 'au', 'sg']);
    for (const c of ['mx', 'ar', 'co']) expect(byCode[c]!.coverage).toBe(admissionv1.Coverage.LIVE);
    for (const c of ['es', 'au', 'sg'])
      expect(byCode[c]).toMatchObject({ coverage: admissionv1.Coverage.PLANNED, plannedFor: '2026-09' });
    expect(Math.floor(timestampDate(byCode['ar']!.maintenanceUntil!).getTime() / 1000)).toBe(
      Math.floor(until.getTime() / 1000),
    );
    expect(byCode['mx']!.maintenanceUntil).toBeUndefined();
    await admin.clearMaintenance({ country: 'ar' });
  });
});
