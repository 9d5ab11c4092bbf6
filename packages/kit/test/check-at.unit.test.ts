import type http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import { create } from '@bufbuild/protobuf';
import { BinaryReader } from '@bufbuild/protobuf/wire';
import { Code, ConnectError, createClient, type HandlerContext } from '@connectrpc/connect';
import { connectNodeAdapter } from '@connectrpc/connect-node';
import { registryv1 } from '@dnc/proto';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  type AdapterClient,
  checkAt,
  createRpcServer,
  grpcTransport,
  PHONE_LIST_HEADER,
  PHONES_ONLY_MS,
  RegistryAdapterCheck,
  rpcTransport,
  type Security,
} from '../src/index.js';

// `checkAt` sends a Check's phones as `phone_list` (one field) and must get the same answer from every
// adapter of the contract: one that reads the field (and says so in its header), one from before it
// (it ignores the field and answers no inputs), and one that refuses a request without phones. The
// servers are real Connect servers over HTTP/2; the client is the kit's own transport.

const { Outcome } = registryv1;
/** A stand-in for the registry: numbers starting with 9 are registered. */
const outcomeOf = (phone: string) => (phone.startsWith('9') ? Outcome.PROHIBITED : Outcome.SAFE);

function listPhones(list: Uint8Array): string[] {
  const reader = new BinaryReader(list);
  const phones: string[] = [];
  while (reader.pos < list.length) phones.push(reader.string());
  return phones;
}

type Behaviour = 'reads' | 'ignores' | 'refuses-empty';
type Received = { form: 'phone_list' | 'phones' | 'none'; count: number };

/** An adapter of the given behaviour; every request's form is recorded in `received`. */
function adapterHandler(behaviour: Behaviour, received: Received[]) {
  return connectNodeAdapter({
    routes: (router) =>
      router.service(registryv1.RegistryAdapterService, {
        check(req: registryv1.CheckRequest, ctx: HandlerContext) {
          const form = req.phoneList.length > 0 ? 'phone_list' : req.phones.length > 0 ? 'phones' : 'none';
          let phones = req.phones;
          if (behaviour === 'reads') {
            ctx.responseHeader.set(PHONE_LIST_HEADER, '1');
            if (form === 'phone_list') phones = listPhones(req.phoneList);
          }
          received.push({ form, count: phones.length });
          if (behaviour === 'refuses-empty' && phones.length === 0)
            throw new ConnectError('phones must not be empty', Code.InvalidArgument);
          if (phones.includes('refuse me'))
            throw new ConnectError('this adapter refuses that input', Code.InvalidArgument);
          return { outcomes: phones.map(outcomeOf), snapshotId: 's1' };
        },
        describe: () => ({}),
      }),
  });
}

const transports = {
  connect: (url: string) => rpcTransport(url),
  grpc: (url: string) => grpcTransport(url),
};

describe.each(Object.entries(transports))('checkAt over %s', (_name, transport) => {
  const servers: http2.Http2Server[] = [];
  const sessions: http2.ServerHttp2Session[] = [];
  const received: Record<Behaviour, Received[]> = { reads: [], ignores: [], 'refuses-empty': [] };
  const clients = {} as Record<Behaviour, AdapterClient>;

  beforeAll(async () => {
    for (const behaviour of ['reads', 'ignores', 'refuses-empty'] as const) {
      const server = createRpcServer(
        { mode: 'plaintext' } as Security,
        adapterHandler(behaviour, received[behaviour]),
      ) as http2.Http2Server;
      server.on('session', (s: http2.ServerHttp2Session) => sessions.push(s));
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
      servers.push(server);
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      clients[behaviour] = createClient(RegistryAdapterCheck, transport(url));
    }
  });
  afterEach(() => {
    vi.useRealTimers();
    for (const list of Object.values(received)) list.length = 0;
  });
  afterAll(() => {
    for (const s of sessions) s.destroy();
    for (const s of servers) s.close();
  });

  const phones = ['9001', '3001', '', '9002', 'ñ 55', '9001'];
  const expected = Uint8Array.from(phones.map(outcomeOf));

  it('sends phone_list to an adapter that reads it, every time', async () => {
    for (let i = 0; i < 3; i++) {
      const answer = await checkAt(clients.reads, 'co', phones, { timeoutMs: 5_000 });
      expect(answer.outcomes).toEqual(expected);
    }
    expect(received.reads).toEqual(Array(3).fill({ form: 'phone_list', count: phones.length }));
  });

  it('sends phones again to an adapter that ignored phone_list, and only phones after that', async () => {
    const answer = await checkAt(clients.ignores, 'co', phones, { timeoutMs: 5_000 });
    expect(answer.outcomes).toEqual(expected);
    expect(received.ignores).toEqual([
      { form: 'phone_list', count: 0 },
      { form: 'phones', count: phones.length },
    ]);
    received.ignores.length = 0;
    expect((await checkAt(clients.ignores, 'co', phones)).outcomes).toEqual(expected);
    expect(received.ignores).toEqual([{ form: 'phones', count: phones.length }]);
  });

  it(`tries phone_list again ${PHONES_ONLY_MS / 1000} s later (the adapter may have been upgraded)`, async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    await checkAt(clients.ignores, 'co', phones);
    received.ignores.length = 0;
    vi.setSystemTime(Date.now() + PHONES_ONLY_MS + 1);
    expect((await checkAt(clients.ignores, 'co', phones)).outcomes).toEqual(expected);
    expect(received.ignores.map((r) => r.form)).toEqual(['phone_list', 'phones']);
  });

  it('sends phones again to an adapter that refused a request without phones', async () => {
    const answer = await checkAt(clients['refuses-empty'], 'co', phones);
    expect(answer.outcomes).toEqual(expected);
    expect(received['refuses-empty'].map((r) => r.form)).toEqual(['phone_list', 'phones']);
  });

  it('an adapter that reads phone_list and refuses the request: its error, sent once', async () => {
    const error = await checkAt(clients.reads, 'co', ['3001', 'refuse me']).catch((e) => e);
    expect(ConnectError.from(error).code).toBe(Code.InvalidArgument);
    expect(ConnectError.from(error).rawMessage).toBe('this adapter refuses that input');
    expect(received.reads.map((r) => r.form)).toEqual(['phone_list']);
  });

  it('no phones: a plain request, answered with no outcomes', async () => {
    const answer = await checkAt(clients.reads, 'co', []);
    expect(answer.outcomes).toEqual(new Uint8Array());
    expect(received.reads).toEqual([{ form: 'none', count: 0 }]);
  });

  it("the caller's onHeader still sees the answer's headers", async () => {
    const seen: string[] = [];
    await checkAt(clients.reads, 'co', phones, {
      onHeader: (h) => seen.push(h.get(PHONE_LIST_HEADER) ?? ''),
    });
    expect(seen).toEqual(['1']);
  });
});

describe('checkAt against an adapter that ignores phone_list, near the call timeout', () => {
  it('the second request gets what is left of the timeout, not a new one', async () => {
    const received: Received[] = [];
    const server = createRpcServer(
      { mode: 'plaintext' } as Security,
      connectNodeAdapter({
        routes: (router) =>
          router.service(registryv1.RegistryAdapterService, {
            async check(req: registryv1.CheckRequest) {
              received.push({ form: req.phoneList.length > 0 ? 'phone_list' : 'phones', count: 0 });
              // Each answer takes 300 ms: the two of them do not fit a 500 ms timeout.
              await new Promise((r) => setTimeout(r, 300));
              return create(registryv1.CheckResponseSchema, { outcomes: req.phones.map(outcomeOf) });
            },
            describe: () => ({}),
          }),
      }),
    ) as http2.Http2Server;
    const sessions: http2.ServerHttp2Session[] = [];
    server.on('session', (s: http2.ServerHttp2Session) => sessions.push(s));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const client = createClient(RegistryAdapterCheck, rpcTransport(url));
    try {
      const started = Date.now();
      const error = await checkAt(client, 'co', ['3001'], { timeoutMs: 500 }).catch((e) => e);
      expect(ConnectError.from(error).code).toBe(Code.DeadlineExceeded);
      expect(Date.now() - started).toBeLessThan(800);
      expect(received.map((r) => r.form)).toEqual(['phone_list', 'phones']);
    } finally {
      for (const s of sessions) s.destroy();
      server.close();
    }
  });
});
