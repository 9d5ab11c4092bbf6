import { randomUUID } from 'node:crypto';
import net from 'node:net';
import tls from 'node:tls';
import {
  type AdapterEntry,
  announceAdapter,
  connectNats,
  type NatsConnection,
  natsNames,
  openBucket,
  signAdapterEntry,
} from '@dnc/kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call } from '../support/http.js';
import { loadRegistry, type SeededOrg, seedOrg } from '../support/seed.js';
import { startTestStack, type TestStack } from '../support/stack.js';

// Issue 13, tests: a forged dnc_adapters entry pointing at a server that records everything it
// receives gets no phone number, and requests still succeed through the real adapter (or 503), never
// "safe" from the impostor; a certificate rotated on disk is picked up without a restart and without
// a failed request; the stack's own nats-server gives each service its own user.

const REGISTERED = '+57 300 123 4567';

/** A server that accepts connections and records every byte, answering nothing. */
async function recorder(kind: 'tls' | 'plain', cert?: { certPem: string; keyPem: string; caPem: string }) {
  const seen = { connections: 0, bytes: [] as Buffer[] };
  const onSocket = (socket: net.Socket) => {
    seen.connections++;
    socket.on('data', (d: Buffer) => seen.bytes.push(d));
    socket.on('error', () => {});
  };
  const server =
    kind === 'tls'
      ? tls.createServer(
          {
            cert: cert!.certPem,
            key: cert!.keyPem,
            ca: cert!.caPem,
            requestCert: true,
            ALPNProtocols: ['h2'],
          },
          onSocket,
        )
      : net.createServer(onSocket);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as net.AddressInfo).port;
  return { seen, address: `http://127.0.0.1:${port}`, close: () => new Promise((r) => server.close(r)) };
}

describe('zero trust: discovery that cannot be spoofed, certificates that rotate (issue 13)', () => {
  let stack: TestStack;
  let org: SeededOrg;
  let nc: NatsConnection;
  let forging: NodeJS.Timeout | undefined;

  beforeAll(async () => {
    stack = await startTestStack({
      label: 'ztdisc',
      countries: ['co'],
      privateNats: true,
      env: { DNC_TLS_RELOAD_MS: '300' },
    });
    org = await seedOrg(stack, ['co'], { quota: 1_000_000 });
    // The rotation test scrubs in a loop for seconds: on a quiet machine that passes the default rate limit.
    await stack.admin(['org', 'set-rate-limit', '--org', org.orgId, '--limit', '60000']);
    await loadRegistry(stack, 'co', [REGISTERED]);
    // Someone who stole the co adapter's NATS password (it may write co.* keys), not its certificate key.
    nc = await connectNats(stack.nats!.url, 'forger', stack.nats!.credentials('registry-adapter-co'));
  });
  afterAll(async () => {
    if (forging) clearInterval(forging);
    await nc?.close();
    await stack?.teardown();
  });

  const scrub = (phones: string[]) =>
    call(stack.baseUrl, 'POST', '/v1/scrub', {
      apiKey: org.apiKey,
      idempotencyKey: randomUUID(),
      json: { country: 'co', phones },
    });

  it('a service cannot write the discovery bucket or publish work with its own NATS user', async () => {
    const worker = await connectNats(stack.nats!.url, 'worker-test', stack.nats!.credentials('job-worker'));
    try {
      const kv = await openBucket(worker, natsNames(stack.natsPrefix).adaptersBucket);
      await expect(kv.put('co.rogue', '{}')).rejects.toThrow();
    } finally {
      await worker.close();
    }
    const admission = await connectNats(
      stack.nats!.url,
      'admission-test',
      stack.nats!.credentials('admission'),
    );
    try {
      const kv = await openBucket(admission, natsNames(stack.natsPrefix).adaptersBucket);
      await expect(kv.put('co.rogue', '{}')).rejects.toThrow();
    } finally {
      await admission.close();
    }
  });

  it('forged entries (unsigned, signed by another adapter) never receive a number; answers stay right', async () => {
    const mxCert = await stack.pki.ca.issue('registry-adapter-mx');
    const impostors = [await recorder('tls', mxCert), await recorder('plain')];
    const mxSigner = await stack.security('registry-adapter-mx');
    const kv = await openBucket(nc, natsNames(stack.natsPrefix).adaptersBucket);
    const forged = (i: number, address: string): AdapterEntry => ({
      country: 'co',
      instance_id: `impostor${i}`,
      address,
      version: 'evil',
      status: 'serving',
      snapshot_id: 'forged',
      registry_size: 0,
      updated_at: new Date().toISOString(),
    });
    const forge = async () => {
      await announceAdapter(kv, forged(1, impostors[0]!.address));
      await announceAdapter(kv, signAdapterEntry(mxSigner, forged(2, impostors[1]!.address)));
    };
    await forge();
    forging = setInterval(() => void forge().catch(() => {}), 1_000);
    await new Promise((r) => setTimeout(r, 1_500));
    const statuses: number[] = [];
    for (let i = 0; i < 30; i++) {
      const res = await scrub([REGISTERED, '+57 300 123 4599']);
      statuses.push(res.status);
      if (res.status === 200) {
        expect(res.body.summary).toMatchObject({ prohibited_numbers: 1, safe_numbers: 1 });
        expect(res.body.prohibited_numbers_to_call).toEqual([REGISTERED]);
      }
    }
    expect(statuses.every((s) => s === 200 || s === 503)).toBe(true);
    expect(statuses.filter((s) => s === 200).length).toBeGreaterThan(25);
    for (const imp of impostors) {
      expect(imp.seen.connections).toBe(0);
      expect(Buffer.concat(imp.seen.bytes).toString('latin1')).not.toContain('300 123');
    }
    // Each refused entry is logged once by each process that watches discovery, never used.
    expect(stack.logsOf('admission')).toMatch(/ignored an adapter entry that fails verification/);
    clearInterval(forging);
    forging = undefined;
    for (const imp of impostors) await imp.close();
  });

  it('a certificate rotated on disk is used without a restart and without a failed request', async () => {
    const adapterPort = Number(new URL(stack.addresses.adapters['co']!).port);
    const serial = () =>
      new Promise<string>((resolve, reject) => {
        const s = tls.connect(
          {
            host: '127.0.0.1',
            port: adapterPort,
            ca: stack.pki.ca.pem,
            ALPNProtocols: ['h2'],
            checkServerIdentity: () => undefined,
          },
          () => {
            resolve(s.getPeerCertificate().serialNumber);
            s.destroy();
          },
        );
        s.on('error', reject);
      });
    const pids = ['gateway', 'admission', 'quota', 'adapter-co'].map((n) => stack.child(n as 'gateway')!.pid);
    const before = await serial();
    let stop = false;
    const results: number[] = [];
    const load = (async () => {
      while (!stop) results.push((await scrub([REGISTERED])).status);
    })();
    for (const name of ['adapter-co', 'gateway', 'admission', 'quota', 'job-scheduler'] as const)
      await stack.rotate(name);
    await expect.poll(serial, { timeout: 10_000, interval: 200 }).not.toBe(before);
    await new Promise((r) => setTimeout(r, 1_500));
    stop = true;
    await load;
    expect(results.length).toBeGreaterThan(5);
    expect(results.filter((s) => s !== 200)).toEqual([]);
    expect(
      ['gateway', 'admission', 'quota', 'adapter-co'].map((n) => stack.child(n as 'gateway')!.pid),
    ).toEqual(pids);
    expect(stack.logsOf('adapter-co')).toMatch(/certificate reloaded/);
  });
});
