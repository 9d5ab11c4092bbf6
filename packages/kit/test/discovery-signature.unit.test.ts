import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { LocalCa } from '@dnc/devstack';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AdapterEntry } from '../src/discovery.js';
import { adapterEntryVerifier, signAdapterEntry } from '../src/security/discovery-signature.js';
import type { Identity } from '../src/security/identity.js';
import type { Security } from '../src/security/security.js';
import { TlsMaterial } from '../src/security/tls-material.js';

const TD = 'dnc.internal';
let dir: string;
let ca: LocalCa;

async function securityOf(identity: Identity, authority = ca): Promise<Security> {
  const d = path.join(dir, `${identity}-${Math.random().toString(36).slice(2)}`);
  await authority.writeIdentity(d, identity);
  // The reader's anchors are always the platform CA's.
  const material = TlsMaterial.load(d, TD, identity);
  return { mode: 'mtls', identity, trustDomain: TD, material };
}

function entry(country: string, address = '127.0.0.1:50061'): AdapterEntry {
  return {
    country,
    instance_id: 'i1',
    address,
    admin_address: '127.0.0.1:50062',
    version: '1.0.0',
    status: 'serving',
    snapshot_id: '7',
    registry_size: 10,
    updated_at: new Date().toISOString(),
  };
}

beforeAll(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'dnc-disc-'));
  ca = await LocalCa.create({ trustDomain: TD });
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('signed adapter announcements (dnc_adapters)', () => {
  it('accepts an entry its own adapter signed', async () => {
    const co = await securityOf('registry-adapter-co');
    const verify = adapterEntryVerifier(await securityOf('gateway'));
    expect(verify('co.i1', signAdapterEntry(co, entry('co')))).toBe(true);
  });

  it('refuses unsigned, altered, re-keyed and cross-country entries', async () => {
    const co = await securityOf('registry-adapter-co');
    const mx = await securityOf('registry-adapter-mx');
    const verify = adapterEntryVerifier(await securityOf('job-worker'));
    const signed = signAdapterEntry(co, entry('co'));
    expect(verify('co.i1', entry('co'))).toBe(false);
    // The forger's classic: keep the signature, point the address at itself.
    expect(verify('co.i1', { ...signed, address: '10.6.6.6:50061' })).toBe(false);
    expect(verify('co.i1', { ...signed, status: 'serving', registry_size: 1 })).toBe(false);
    expect(verify('co.i2', signed)).toBe(false);
    // An adapter announcing another country, even correctly signed by itself.
    expect(verify('co.i1', signAdapterEntry(mx, entry('co')))).toBe(false);
    // A gateway (or any non-adapter identity) cannot announce an adapter.
    expect(verify('co.i1', signAdapterEntry(await securityOf('gateway'), entry('co')))).toBe(false);
  });

  it('refuses an entry signed by a certificate of another CA', async () => {
    const rogue = await LocalCa.create({ trustDomain: TD });
    const d = path.join(dir, 'rogue');
    await rogue.writeIdentity(d, 'registry-adapter-co');
    const forger: Security = {
      mode: 'mtls',
      identity: 'registry-adapter-co',
      trustDomain: TD,
      material: TlsMaterial.load(d, TD, 'registry-adapter-co'),
    };
    const verify = adapterEntryVerifier(await securityOf('gateway'));
    expect(verify('co.i1', signAdapterEntry(forger, entry('co', '10.6.6.6:1')))).toBe(false);
  });

  it('in plaintext development mode entries travel unsigned and are taken as they are', () => {
    const dev: Security = { mode: 'plaintext', identity: 'registry-adapter-co', trustDomain: TD };
    const signed = signAdapterEntry(dev, entry('co'));
    expect(signed.signature).toBeUndefined();
    expect(adapterEntryVerifier({ ...dev, identity: 'gateway' })('co.i1', signed)).toBe(true);
  });
});
