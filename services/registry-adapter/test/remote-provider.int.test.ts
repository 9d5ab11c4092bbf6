import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer as createHttpServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Code, ConnectError } from '@connectrpc/connect';
import { LocalCa } from '@dnc/devstack';
import { createLogger, readPublicReason } from '@dnc/kit';
import { registryv1 } from '@dnc/proto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { RunningAdapter } from '../src/index.js';
import { ProviderError } from '../src/providers/provider.js';
import { lookupAnswerLimit } from '../src/providers/registry-http.js';
import { RemoteProvider } from '../src/providers/remote-provider.js';
import { adapterClients, isolatedEnv, startTestAdapter } from './support/adapter.js';

type Step =
  | number
  | 'hang'
  | 'maintenance'
  | 'malformed'
  | { redirect: string }
  /** An answer padded to exactly this many bytes (valid JSON), or announced as this many. */
  | { size: number }
  | { declared: number }
  /** Headers at once, then a body that never ends. */
  | 'slow-body';

/** The registry's TLS: a private CA the adapter is told to trust (DNC_REMOTE_REGISTRY_CA_FILE). */
let registryCa: LocalCa;
let registryTls: { cert: string; key: string };

/** A remote registry played by a real HTTPS server: scripted answers per request. */
class FakeRegistry {
  server!: Server;
  url = '';
  registered = new Set<string>();
  requests: string[][] = [];
  /** Next responses to give before answering normally. */
  script: Step[] = [];

  async start(): Promise<void> {
    this.server = createServer(registryTls, (req, res) => void this.handle(req, res));
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', () => r()));
    this.url = `https://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  private answer(numbers: string[]): string {
    return JSON.stringify({ registered: numbers.map((n) => this.registered.has(n)), snapshot_id: 'r-7' });
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    let body = '';
    for await (const c of req) body += c;
    const { numbers } = JSON.parse(body) as { numbers: string[] };
    this.requests.push(numbers);
    const step = this.script.shift();
    if (step === 'hang') return; // never answers: the client's deadline must end it
    if (step === 'slow-body') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"registered":[');
      return; // the body never ends
    }
    if (typeof step === 'object' && 'redirect' in step) {
      res.writeHead(307, { location: step.redirect });
      res.end();
      return;
    }
    if (typeof step === 'object' && 'size' in step) {
      const json = this.answer(numbers);
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(json + ' '.repeat(step.size - Buffer.byteLength(json)));
      return;
    }
    if (typeof step === 'object' && 'declared' in step) {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(step.declared) });
      res.write(this.answer(numbers));
      return;
    }
    if (step === 'maintenance') {
      res.writeHead(503, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ status: 'maintenance', until: new Date(Date.now() + 120_000).toISOString() }));
      return;
    }
    if (step === 'malformed') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ registered: [true] }));
      return;
    }
    if (typeof step === 'number') {
      res.writeHead(step, { 'content-type': 'text/plain' });
      res.end('internal registry stack trace: secret-host-42');
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(this.answer(numbers));
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((r) => this.server.close(() => r()));
  }
}

const logger = createLogger('test', 'silent');
let caDir: string;
beforeAll(async () => {
  registryCa = await LocalCa.create({ name: 'registry operator CA' });
  const issued = await registryCa.issue('registry-adapter-es');
  registryTls = { cert: issued.certPem, key: issued.keyPem };
  caDir = mkdtempSync(path.join(os.tmpdir(), 'dnc-registry-ca-'));
  writeFileSync(path.join(caDir, 'ca.pem'), registryCa.pem);
});
afterAll(() => rmSync(caDir, { recursive: true, force: true }));
const keys = (...k: number[]) => Float64Array.from(k);

describe('remote registry provider against a real HTTP server', () => {
  const registry = new FakeRegistry();
  beforeAll(() => registry.start());
  afterAll(() => registry.stop());
  afterEach(() => {
    registry.script = [];
    registry.requests = [];
  });

  const provider = (over: Partial<ConstructorParameters<typeof RemoteProvider>[0]> = {}) =>
    new RemoteProvider({
      baseUrl: registry.url,
      ca: registryCa.pem,
      country: 'es',
      toE164: (k) => `+34${k}`,
      batchSize: 2,
      timeoutMs: 300,
      retries: 2,
      backoffBaseMs: 10,
      breakerThreshold: 2,
      breakerCooldownMs: 500,
      logger,
      ...over,
    });

  it('batches, keeps the order and reads the answer', async () => {
    registry.registered = new Set(['+34612345678', '+34911234567']);
    const p = provider();
    const r = await p.lookup(
      keys(600000000, 612345678, 911234567, 700000000, 612345678),
      new AbortController().signal,
    );
    expect([...r.registered]).toEqual([0, 1, 1, 0, 1]);
    expect(registry.requests.map((b) => b.length)).toEqual([2, 2, 1]);
    expect(r.snapshotId).toBe('r-7');
    expect(p.state().status).toBe('serving');
  });

  it('retries transient failures with backoff, then succeeds', async () => {
    registry.script = [500, 'hang'];
    const r = await provider().lookup(keys(600000000), new AbortController().signal);
    expect([...r.registered]).toEqual([0]);
    expect(registry.requests.length).toBe(3);
  });

  it('bounded retries end in unavailable; the breaker then fails fast and recovers after its cooldown', async () => {
    const p = provider();
    registry.script = [500, 502, 503, 500, 500, 500];
    for (let i = 0; i < 2; i++) {
      const e = await p.lookup(keys(600000000), new AbortController().signal).catch((x) => x);
      expect(e).toBeInstanceOf(ProviderError);
      expect(e.errorClass).toBe('unavailable');
      expect(e.message).not.toMatch(/secret|stack/);
    }
    expect(registry.requests.length).toBe(6); // 2 lookups x (1 + 2 retries)
    expect(p.state().status).toBe('unavailable');
    const fast = await p.lookup(keys(600000000), new AbortController().signal).catch((x) => x);
    expect(fast.errorClass).toBe('unavailable');
    expect(registry.requests.length).toBe(6); // open: no request
    await new Promise((r) => setTimeout(r, 600));
    const ok = await p.lookup(keys(600000000), new AbortController().signal);
    expect([...ok.registered]).toEqual([0]);
    expect(p.state().status).toBe('serving');
  });

  it('maintenance is not retried and shows in the state', async () => {
    const p = provider();
    registry.script = ['maintenance'];
    const e = await p.lookup(keys(600000000), new AbortController().signal).catch((x) => x);
    expect(e.errorClass).toBe('maintenance');
    expect(registry.requests.length).toBe(1);
    expect(p.state().status).toBe('maintenance');
    expect(p.state().maintenanceUntil).toBeInstanceOf(Date);
  });

  it('a malformed answer is never read as "not registered"', async () => {
    registry.script = ['malformed'];
    const e = await provider()
      .lookup(keys(600000000, 700000000), new AbortController().signal)
      .catch((x) => x);
    expect(e).toBeInstanceOf(ProviderError);
  });

  it("never waits beyond the caller's deadline", async () => {
    registry.script = ['hang', 'hang', 'hang'];
    const started = Date.now();
    const e = await provider({ timeoutMs: 5_000 })
      .lookup(keys(600000000), AbortSignal.timeout(200))
      .catch((x) => x);
    expect(e).toBeDefined();
    expect(Date.now() - started).toBeLessThan(1_000);
  });
});

describe('the remote registry client is bounded: https only, no redirects, capped size and time', () => {
  const registry = new FakeRegistry();
  beforeAll(() => registry.start());
  afterAll(() => registry.stop());
  afterEach(() => {
    registry.script = [];
    registry.requests = [];
  });
  const provider = (over: Partial<ConstructorParameters<typeof RemoteProvider>[0]> = {}) =>
    new RemoteProvider({
      baseUrl: registry.url,
      ca: registryCa.pem,
      country: 'es',
      toE164: (k) => `+34${k}`,
      batchSize: 3,
      timeoutMs: 400,
      retries: 2,
      backoffBaseMs: 10,
      logger,
      ...over,
    });
  const lookup = (p: RemoteProvider, ...k: number[]) =>
    p.lookup(keys(...k), new AbortController().signal).catch((x: unknown) => x);

  it('refuses a plain http:// registry (and one with credentials in the URL) when built', () => {
    expect(() => provider({ baseUrl: registry.url.replace('https:', 'http:') })).toThrow(/https/);
    expect(() => provider({ baseUrl: registry.url.replace('https://', 'https://u:p@') })).toThrow(
      /credentials/,
    );
  });

  it('refuses a registry whose certificate is not trusted (no private CA given)', async () => {
    const e = await lookup(provider({ ca: undefined, retries: 0 }), 612345678);
    expect(e).toBeInstanceOf(ProviderError);
  });

  it('never follows a redirect: the numbers are not sent where it points, and nothing is retried', async () => {
    const elsewhere: string[] = [];
    const sink = createHttpServer((req, res) => {
      let b = '';
      req.on('data', (c) => (b += c));
      req.on('end', () => {
        elsewhere.push(b);
        res.end('{}');
      });
    });
    await new Promise<void>((r) => sink.listen(0, '127.0.0.1', () => r()));
    registry.script = [{ redirect: `http://127.0.0.1:${(sink.address() as AddressInfo).port}/v1/lookup` }];
    const e = await lookup(provider(), 612345678);
    expect(e).toBeInstanceOf(ProviderError);
    expect((e as ProviderError).errorClass).toBe('unavailable');
    expect(registry.requests).toHaveLength(1);
    expect(elsewhere).toEqual([]);
    await new Promise((r) => sink.close(r));
  });

  it('reads an answer of exactly the size limit, refuses one byte more', async () => {
    const limit = lookupAnswerLimit(2);
    registry.registered = new Set(['+34612345678']);
    registry.script = [{ size: limit }];
    const ok = (await lookup(provider(), 612345678, 700000000)) as { registered: Uint8Array };
    expect([...ok.registered]).toEqual([1, 0]);
    registry.script = [{ size: limit + 1 }];
    const e = await lookup(provider(), 612345678, 700000000);
    expect(e).toBeInstanceOf(ProviderError);
    expect(registry.requests).toHaveLength(2); // refused, not retried
  });

  it('refuses at once an answer that announces more than the limit', async () => {
    registry.script = [{ declared: lookupAnswerLimit(1) + 1 }];
    const started = Date.now();
    const e = await lookup(provider({ timeoutMs: 5_000 }), 612345678);
    expect(e).toBeInstanceOf(ProviderError);
    expect(Date.now() - started).toBeLessThan(1_000);
  });

  it('a body that never ends is cut at the request deadline (body included)', async () => {
    registry.script = ['slow-body', 'slow-body', 'slow-body'];
    const started = Date.now();
    const e = await lookup(provider({ timeoutMs: 200 }), 612345678);
    expect(e).toBeInstanceOf(ProviderError);
    expect(registry.requests).toHaveLength(3);
    expect(Date.now() - started).toBeLessThan(2_000);
  });
});

describe('an adapter for a technical country served by the remote provider', () => {
  const registry = new FakeRegistry();
  const env = isolatedEnv('adapter_remote');
  let adapter: RunningAdapter;
  beforeAll(async () => {
    await registry.start();
    registry.registered = new Set(['+34612345678']);
    adapter = await startTestAdapter(env, 'es', {
      DNC_REGISTRY_PROVIDER: 'remote',
      DNC_REMOTE_REGISTRY_URL: registry.url,
      DNC_REMOTE_REGISTRY_CA_FILE: path.join(caDir, 'ca.pem'),
      DNC_REMOTE_RETRIES: '0',
    });
  });
  afterAll(async () => {
    await adapter?.shutdown();
    await registry.stop();
    await env.drop();
  });

  it('validates before calling the registry and maps failures to public reasons only', async () => {
    const { adapter: client, admin } = adapterClients(adapter.address);
    const r = await client.check({
      country: 'es',
      phones: ['+34 612 34 56 78', '612345679', 'garbage', '+52 55 1234 5678'],
    });
    expect(r.outcomes).toEqual([
      registryv1.Outcome.PROHIBITED,
      registryv1.Outcome.SAFE,
      registryv1.Outcome.INVALID_UNPARSEABLE,
      registryv1.Outcome.INVALID_WRONG_COUNTRY,
    ]);
    // Only the two valid Spanish numbers went to the remote registry.
    expect(registry.requests.flat()).toEqual(['+34612345678', '+34612345679']);

    registry.script = [500];
    const e = await client.check({ country: 'es', phones: ['+34 612 34 56 78'] }).catch((x) => x);
    expect(e).toBeInstanceOf(ConnectError);
    expect(e.code).toBe(Code.Unavailable);
    expect(readPublicReason(e)?.reason).toBe('country_service_temporarily_unavailable');
    expect(e.message).not.toMatch(/secret|stack|500|remote|http/i);

    const load = await admin.getRegistryStatus({});
    expect(load.country).toBe('es');
    // Announced as a remote registry: lookups may be billed, so no gateway Checks before Admit.
    expect(adapter.announcer.entry()).toMatchObject({ country: 'es', provider: 'remote' });
  });
});
