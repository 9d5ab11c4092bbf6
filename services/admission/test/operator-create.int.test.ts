import { randomUUID } from 'node:crypto';
import { Code, ConnectError } from '@dnc/kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { holdRow } from '../../../test/support/held-row.js';
import { MAX_ACTIVE_KEYS } from '../src/organization.js';
import { Harness, outcome } from './harness.js';

// The operator's creations (dnc-admin org create, key create) are safe when their answer is lost. Found in
// a review (2026-12-05): a retried `org create` made a second organization, and a key whose answer was lost
// (deadline, connection cut, admission stopping) stayed active with nobody holding its secret.
const h = new Harness();

beforeAll(async () => {
  await h.start();
});

afterAll(async () => {
  await h.stop();
});

/** Hold the organization's row FOR UPDATE, as a creation in flight does. */
const holdOrganization = (orgId: string) =>
  holdRow(h.databaseUrl, 'SELECT 1 FROM admission.organizations WHERE org_id = $1 FOR UPDATE', [orgId]);

async function activeKeys(orgId: string): Promise<string[]> {
  const { keys } = await h.clients().admin.listApiKeys({ orgId });
  return keys.filter((k) => !k.revokedAt).map((k) => k.keyId);
}

describe('CreateOrganization with the caller-chosen org_id', () => {
  it('the same id and name again answer the same organization; another name is a conflict', async () => {
    const { admin } = h.clients();
    const orgId = randomUUID();
    expect((await admin.createOrganization({ orgId, name: 'Retry Co' })).orgId).toBe(orgId);
    expect((await admin.createOrganization({ orgId, name: 'Retry Co' })).orgId).toBe(orgId);
    const rows = await h.sql('SELECT count(*)::int AS n FROM admission.organizations WHERE org_id = $1', [
      orgId,
    ]);
    expect(rows.rows).toEqual([{ n: 1 }]);
    expect(await outcome(admin.createOrganization({ orgId, name: 'Other Co' }))).toBe('conflict');
    expect(await outcome(admin.createOrganization({ orgId: 'ORG-1', name: 'Retry Co' }))).toBe(
      'validation_error',
    );
    // Without an id, each call is a new organization (as before).
    const a = await admin.createOrganization({ name: 'Retry Co' });
    const b = await admin.createOrganization({ name: 'Retry Co' });
    expect(new Set([orgId, a.orgId, b.orgId]).size).toBe(3);
  });
});

describe('CreateApiKey with the caller-chosen key_id, and RevokeApiKey by organization', () => {
  it('the key gets the id; the id again is a conflict; at most 20 active keys', async () => {
    const { admin } = h.clients();
    const c = await h.customer();
    const keyId = randomUUID();
    expect((await admin.createApiKey({ orgId: c.orgId, keyId })).keyId).toBe(keyId);
    expect(await outcome(admin.createApiKey({ orgId: c.orgId, keyId }))).toBe('conflict');
    expect(await outcome(admin.createApiKey({ orgId: c.orgId, keyId: 'key-1' }))).toBe('validation_error');
    expect(await outcome(admin.createApiKey({ orgId: randomUUID() }))).toBe('not_found');
    // The dashboard's limit holds for the operator's keys too (its listing shows every active key).
    while ((await activeKeys(c.orgId)).length < MAX_ACTIVE_KEYS) await admin.createApiKey({ orgId: c.orgId });
    expect(await outcome(admin.createApiKey({ orgId: c.orgId }))).toBe('conflict');
    expect(await activeKeys(c.orgId)).toHaveLength(MAX_ACTIVE_KEYS);
  });

  it('a creation whose call ended before its commit makes no key; the revocation by its id then finds none', async () => {
    const { admin } = h.clients();
    const c = await h.customer();
    const keyId = randomUUID();
    const held = await holdOrganization(c.orgId);
    const err = await admin.createApiKey({ orgId: c.orgId, keyId }, { timeoutMs: 300 }).catch((e) => e);
    expect(ConnectError.from(err).code).toBe(Code.DeadlineExceeded);
    await held.release();
    // The creation, once the lock is free, rolls back: its caller is gone and would never see the secret.
    await new Promise((r) => setTimeout(r, 300));
    expect(await activeKeys(c.orgId)).toEqual([c.keyId]);
    expect(await outcome(admin.revokeApiKey({ keyId, orgId: c.orgId }))).toBe('not_found');
  });

  it('a revocation by organization waits for a creation in flight and revokes the key it makes', async () => {
    const { admin } = h.clients();
    const c = await h.customer();
    const keyId = randomUUID();
    const held = await holdOrganization(c.orgId);
    // In this order, as the CLI does: the creation waits on the row first, then the revocation behind it.
    const creating = admin.createApiKey({ orgId: c.orgId, keyId });
    await held.waiters(1);
    const revoking = admin.revokeApiKey({ keyId, orgId: c.orgId });
    await held.waiters(2);
    await held.release();
    expect((await creating).keyId).toBe(keyId);
    const revoked = await revoking;
    expect(revoked.apiKey).toMatchObject({ keyId, orgId: c.orgId });
    expect(revoked.apiKey?.revokedAt).toBeDefined();
    expect(await activeKeys(c.orgId)).toEqual([c.keyId]);
    // Another organization's id names no key of it.
    const other = await h.customer();
    expect(await outcome(admin.revokeApiKey({ keyId: c.keyId, orgId: other.orgId }))).toBe('not_found');
    expect(await activeKeys(c.orgId)).toEqual([c.keyId]);
  });
});
