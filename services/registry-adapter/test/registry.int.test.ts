import { create } from '@bufbuild/protobuf';
import { WireType } from '@bufbuild/protobuf/wire';
import { Code, ConnectError, createClient } from '@connectrpc/connect';
import { checkAt, checkRequest, grpcTransport, PHONE_LIST_HEADER, readPublicReason } from '@dnc/kit';
import { healthv1, registryv1 } from '@dnc/proto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningAdapter } from '../src/index.js';
import { adapterClients, isolatedEnv, loadLines, startTestAdapter } from './support/adapter.js';

const { Outcome, LoadMode } = registryv1;

// Written forms of two registered Mexican lines and one unregistered line (issue 4: every written form
// of a registered number is found; old forms 044/045/+52 1 normalize to the 10-digit line).
const REGISTERED = ['55 1234 5678', '+52 81 8123 4567'];
const FORMS_OF_5512345678 = [
  '+52 55 1234 5678',
  '+525512345678',
  '5512345678',
  '(55) 1234-5678',
  '55.1234.5678',
  '0052 55 1234 5678',
  '044 55 1234 5678',
  '045 55 1234 5678',
  '+52 1 55 1234 5678',
  'tel:+52-55-1234-5678',
  ' 55 1234 5678 ',
];

describe('registry adapter (mx) against PostgreSQL and NATS', () => {
  const env = isolatedEnv('adapter_mx');
  let adapter: RunningAdapter;

  beforeAll(async () => {
    adapter = await startTestAdapter(env, 'mx', { DNC_ENABLE_DRILLS: '1' });
  });
  afterAll(async () => {
    await adapter?.shutdown();
    await env.drop();
  });

  it('refuses to answer without a snapshot: unavailable, never safe', async () => {
    const { adapter: client } = adapterClients(adapter.address);
    const err = await client.check({ country: 'mx', phones: ['55 1234 5678'] }).catch((e) => e);
    expect(err).toBeInstanceOf(ConnectError);
    expect(err.code).toBe(Code.Unavailable);
    expect(readPublicReason(err)?.reason).toBe('country_service_temporarily_unavailable');
    const d = await adapterClients(adapter.address).inspect.describe({});
    expect(d.status).toBe(registryv1.AdapterStatus.UNAVAILABLE);
    // gRPC health stays SERVING (the pod must take the admin Load that brings the first snapshot);
    // callers choose adapters by the discovery status, which is `unavailable` here.
    // The plaintext health listener, as a kubelet probe asks it (no client certificate).
    const health = createClient(
      healthv1.Health,
      grpcTransport(`http://127.0.0.1:${adapter.service.healthListenPort}`),
    );
    const h = await health.check({ service: '' });
    expect(h.status).toBe(healthv1.HealthCheckResponse_ServingStatus.SERVING);
  });

  // Found by a review (2026-12-03): a line the validator rejects was dropped and the load committed; if it
  // was a registered subscriber written in a form the rules do not read, every other form of the number was
  // then answered safe. A load with rejected lines is refused unless the operator allows that many.
  it('a replace or add with lines that are not numbers of the country is refused unless allowed; the registry is unchanged', async () => {
    const before = await loadLines(adapter.address, 'mx', LoadMode.REPLACE, REGISTERED);
    const file = [...REGISTERED, '81 8123 4567', '# note', 'not a number', '+1 212 555 0123'];
    for (const [mode, allowed] of [
      [LoadMode.REPLACE, 0],
      [LoadMode.REPLACE, 1],
      [LoadMode.ADD, 0],
    ] as const) {
      const error = await loadLines(adapter.address, 'mx', mode, file, 1000, allowed).then(
        () => undefined,
        (e: unknown) => ConnectError.from(e),
      );
      expect(error?.code, `${mode} ${allowed}`).toBe(Code.FailedPrecondition);
      // Which lines, by number (never their text: a registry line is a phone number).
      expect(error?.rawMessage).toMatch(/2 lines .*lines 5, 6\b.*unchanged/);
      expect(error?.rawMessage).not.toContain('212');
    }
    const { admin } = adapterClients(adapter.address);
    expect((await admin.getRegistryStatus({})).snapshotId).toBe(before.snapshotId);
    // A removal's rejected lines remove nothing: the numbers stay prohibited, so it is never refused for them.
    const removed = await loadLines(adapter.address, 'mx', LoadMode.REMOVE, ['not a number', '81 8123 4567']);
    expect(removed.rejected).toBe(1n);
  });

  // Found by a review (2026-12-03): a replace of a file cut short (an upload or a pipe that died) became the
  // whole registry, answering safe for every number it lost.
  it('a replace or remove that would halve a registry of 10,000 numbers or more is refused unless the shrink is meant', async () => {
    const numbers = (n: number) => Array.from({ length: n }, (_, i) => String(5_510_000_000 + i));
    const { admin } = adapterClients(adapter.address);
    const full = await loadLines(adapter.address, 'mx', LoadMode.REPLACE, numbers(12_000), 5_000);
    expect(full.registrySize).toBe(12_000n);
    const cut = await loadLines(adapter.address, 'mx', LoadMode.REPLACE, numbers(5_000), 5_000).then(
      () => undefined,
      (e: unknown) => ConnectError.from(e),
    );
    expect(cut?.code).toBe(Code.FailedPrecondition);
    expect(cut?.rawMessage).toMatch(/5000 numbers against 12000 .*unchanged/);
    expect((await admin.getRegistryStatus({})).snapshotId).toBe(full.snapshotId);
    // More than half is an ordinary replace; a shrink that is meant is loaded when said so.
    expect(
      (await loadLines(adapter.address, 'mx', LoadMode.REPLACE, numbers(6_001), 5_000)).registrySize,
    ).toBe(6_001n);
    const meant = await loadLines(adapter.address, 'mx', LoadMode.REPLACE, REGISTERED, 1000, 0, true);
    expect(meant.registrySize).toBe(2n);
    // Found by a review (2026-12-03): the whole registry loaded with mode remove (a delta command reused
    // for the month's full export) left only the numbers that had left it, answering safe for the others.
    await loadLines(adapter.address, 'mx', LoadMode.REPLACE, numbers(12_000), 5_000);
    const removal = await loadLines(adapter.address, 'mx', LoadMode.REMOVE, numbers(7_000), 5_000).then(
      () => undefined,
      (e: unknown) => ConnectError.from(e),
    );
    expect(removal?.code).toBe(Code.FailedPrecondition);
    expect(removal?.rawMessage).toMatch(
      /would leave 5000 of the registry's 12000 numbers.*mode remove.*unchanged/,
    );
    expect(
      (await loadLines(adapter.address, 'mx', LoadMode.REMOVE, numbers(2_000), 5_000)).registrySize,
    ).toBe(10_000n);
    expect(
      (await loadLines(adapter.address, 'mx', LoadMode.REMOVE, numbers(7_000), 5_000, 0, true)).registrySize,
    ).toBe(5_000n);
  });

  it('loads a file, counts bad lines, and finds every written form of a registered line', async () => {
    const res = await loadLines(
      adapter.address,
      'mx',
      LoadMode.REPLACE,
      [
        ...REGISTERED,
        '# a comment',
        '# exported 2026-12-01, 3 files',
        // A number marked with `#` (Check reads `#5512345678` as the number): a line, never a comment.
        '#81 8123 4567',
        '',
        'not a number',
        '+1 212 555 0123',
        '55 1234 5678', // duplicate
        'x'.repeat(80),
      ],
      1000,
      3,
    );
    expect(res.linesRead).toBe(7n);
    expect(res.accepted).toBe(4n);
    expect(res.rejected).toBe(3n);
    expect(res.registrySize).toBe(2n);
    expect(res.snapshotId).not.toBe('');

    const { adapter: client, admin } = adapterClients(adapter.address);
    const phones = [
      ...FORMS_OF_5512345678,
      '81 8123 4567',
      '55 9999 0000',
      'garbage',
      '+57 300 123 4567',
      '123',
    ];
    const answer = await client.check({ country: 'mx', phones });
    expect(answer.snapshotId).toBe(res.snapshotId);
    expect(answer.outcomes).toEqual([
      ...FORMS_OF_5512345678.map(() => Outcome.PROHIBITED),
      Outcome.PROHIBITED,
      Outcome.SAFE,
      Outcome.INVALID_UNPARSEABLE,
      Outcome.INVALID_WRONG_COUNTRY,
      Outcome.INVALID_LENGTH,
    ]);

    const status = await admin.getRegistryStatus({});
    expect(status).toMatchObject({ country: 'mx', snapshotId: res.snapshotId, registrySize: 2n });
    const d = await adapterClients(adapter.address).inspect.describe({});
    expect(d).toMatchObject({ country: 'mx', status: registryv1.AdapterStatus.SERVING, registrySize: 2n });
    expect(d.snapshotTime).toBeDefined();
  });

  it('add and remove build new snapshots from the current one', async () => {
    const added = await loadLines(adapter.address, 'mx', LoadMode.ADD, ['+52 33 3123 4567', '55 1234 5678']);
    expect(added.registrySize).toBe(3n);
    const removed = await loadLines(adapter.address, 'mx', LoadMode.REMOVE, ['+52 1 55 1234 5678']);
    expect(removed.registrySize).toBe(2n);
    const { adapter: client } = adapterClients(adapter.address);
    const answer = await client.check({
      country: 'mx',
      phones: ['55 1234 5678', '33 3123 4567', '81 8123 4567'],
    });
    expect(answer.snapshotId).toBe(removed.snapshotId);
    expect(answer.outcomes).toEqual([Outcome.SAFE, Outcome.PROHIBITED, Outcome.PROHIBITED]);
  });

  it('refuses a replace without one valid number (an empty registry would answer safe)', async () => {
    const err = await loadLines(adapter.address, 'mx', LoadMode.REPLACE, ['bad', '+1 212 555 0123']).catch(
      (e) => e,
    );
    expect(err.code).toBe(Code.FailedPrecondition);
    const { admin } = adapterClients(adapter.address);
    expect((await admin.getRegistryStatus({})).registrySize).toBe(2n);
  });

  it('one load at a time per country: a second concurrent load is refused, the first one commits', async () => {
    const { admin } = adapterClients(adapter.address);
    let release!: () => void;
    const held = new Promise<void>((r) => {
      release = r;
    });
    async function* slow() {
      yield { part: { case: 'header' as const, value: { country: 'mx', mode: LoadMode.ADD } } };
      yield { part: { case: 'chunk' as const, value: { lines: ['+52 55 2222 3333'] } } };
      await held;
      yield { part: { case: 'end' as const, value: { lines: 1n } } };
    }
    const first = admin.load(slow());
    await new Promise((r) => setTimeout(r, 300));
    const second = await loadLines(adapter.address, 'mx', LoadMode.ADD, ['+52 55 4444 5555']).catch((e) => e);
    expect(second.code).toBe(Code.Aborted);
    release();
    const done = await first;
    expect(done.registrySize).toBe(3n);
    await loadLines(adapter.address, 'mx', LoadMode.REMOVE, ['+52 55 2222 3333']);
  });

  it('answers the same over gRPC, Connect and Connect JSON, and refuses a phone of invalid UTF-8', async () => {
    // The adapter reads a binary request's phones from its bytes (check-request.ts), a JSON one's
    // from the decoded message: every protocol must give the same answer.
    const { adapter: grpc, connect, json, checks } = adapterClients(adapter.address);
    const phones = ['55 1234 5678', '+52 55 9999 0000', 'ñ 55 9999 0000', '', '5'.repeat(64), '55 1234 5678'];
    const want = await grpc.check({ country: 'mx', phones });
    expect(want.outcomes).toHaveLength(phones.length);
    expect(want.outcomes).not.toContain(Outcome.UNSPECIFIED);
    expect(want.outcomes[5]).toBe(want.outcomes[0]);
    // 'ñ 55 9999 0000' is the unregistered line with a stray letter, as '+52 55 9999 0000' is.
    expect(want.outcomes.slice(1, 5)).toEqual([
      Outcome.SAFE,
      Outcome.SAFE,
      Outcome.INVALID_UNPARSEABLE,
      Outcome.INVALID_LENGTH,
    ]);
    for (const client of [connect, json])
      expect((await client.check({ country: 'mx', phones })).outcomes).toEqual(want.outcomes);
    // The platform's own encodings (kit checkRequest: the phones as one raw field; binary only), and
    // phone_list (one field of them all), which this adapter announces on every answer, refusals too.
    for (const client of [grpc, connect]) {
      expect((await client.check(checkRequest('mx', phones))).outcomes).toEqual(want.outcomes);
      const headers: (string | null)[] = [];
      const onHeader = (h: Headers) => headers.push(h.get(PHONE_LIST_HEADER));
      const listed = await client.check(checkRequest('mx', phones, 'phone_list'), { onHeader });
      expect(listed.outcomes).toEqual(want.outcomes);
      expect(headers).toEqual(['1']);
      const both = checkRequest('mx', phones, 'phone_list');
      both.phones = ['55 1234 5678'];
      const refused = await client.check(both).catch((e) => e);
      expect(refused.code).toBe(Code.InvalidArgument);
      expect(refused.rawMessage).toBe('a Check request sets phones or phone_list, not both');
      expect(refused.metadata.get(PHONE_LIST_HEADER)).toBe('1');
    }
    // phone_list in JSON (base64), as protobuf JSON writes bytes.
    expect(
      (await json.check(create(registryv1.CheckRequestSchema, checkRequest('mx', phones, 'phone_list'))))
        .outcomes,
    ).toEqual(want.outcomes);
    // The platform's clients (kit checkAt) read the answer's outcomes as bytes: the same outcomes over
    // every protocol, JSON's `outcomes` names included.
    for (const client of Object.values(checks))
      expect([...(await checkAt(client, 'mx', phones)).outcomes]).toEqual(want.outcomes);
    // A phone whose bytes are not UTF-8 (0xc3 alone), written as the field's raw bytes.
    const bad = create(registryv1.CheckRequestSchema, { country: 'mx', phones: [] });
    bad.$unknown = [{ no: 2, wireType: WireType.LengthDelimited, data: Uint8Array.from([1, 0xc3]) }];
    for (const client of [grpc, connect]) {
      const refused = await client.check(bad).catch((e) => e);
      expect(refused).toBeInstanceOf(ConnectError);
      expect(refused.code).toBe(Code.Internal);
    }
  });

  it('rejects a wrong country, an oversized batch and an oversized phone', async () => {
    const { adapter: client } = adapterClients(adapter.address);
    const wrong = await client.check({ country: 'ar', phones: ['55 1234 5678'] }).catch((e) => e);
    expect(wrong.code).toBe(Code.InvalidArgument);
    const big = await client.check({ country: 'mx', phones: new Array(100_001).fill('1') }).catch((e) => e);
    expect(big.code).toBe(Code.InvalidArgument);
    const long = await client.check({ country: 'mx', phones: ['5'.repeat(65)] }).catch((e) => e);
    expect(long.code).toBe(Code.InvalidArgument);
    const ok = await client.check({ country: 'mx', phones: [] });
    expect(ok.outcomes).toEqual([]);
  });

  it('drills: latency honours the deadline, unavailable and maintenance fail with their public reason', async () => {
    const { adapter: client, admin } = adapterClients(adapter.address);
    await admin.setDrill({ latencyMs: 2_000 });
    const started = Date.now();
    const slow = await client
      .check({ country: 'mx', phones: ['55 1234 5678'] }, { timeoutMs: 300 })
      .catch((e) => e);
    expect(slow.code).toBe(Code.DeadlineExceeded);
    expect(Date.now() - started).toBeLessThan(1_500);

    await admin.setDrill({ failure: registryv1.DrillFailure.UNAVAILABLE });
    const down = await client.check({ country: 'mx', phones: ['55 1234 5678'] }).catch((e) => e);
    expect(down.code).toBe(Code.Unavailable);
    expect(readPublicReason(down)?.reason).toBe('country_service_temporarily_unavailable');
    expect((await adapterClients(adapter.address).inspect.describe({})).status).toBe(
      registryv1.AdapterStatus.UNAVAILABLE,
    );

    await admin.setDrill({ failure: registryv1.DrillFailure.MAINTENANCE });
    const maint = await client.check({ country: 'mx', phones: ['55 1234 5678'] }).catch((e) => e);
    expect(maint.code).toBe(Code.Unavailable);
    expect(readPublicReason(maint)?.reason).toBe('country_service_maintenance');
    expect(String(maint.message)).not.toMatch(/drill|provider|local/i);
    expect((await adapterClients(adapter.address).inspect.describe({})).status).toBe(
      registryv1.AdapterStatus.MAINTENANCE,
    );

    const cleared = await admin.setDrill({ clear: true });
    expect(cleared).toMatchObject({ latencyMs: 0, failure: registryv1.DrillFailure.UNSPECIFIED });
    const ok = await client.check({ country: 'mx', phones: ['33 3123 4567'] });
    expect(ok.outcomes).toEqual([Outcome.PROHIBITED]);
  });

  it('metrics count checks, outcomes and provider errors without any phone number', async () => {
    const text = await adapter.service.metrics.metrics();
    expect(text).toMatch(/dnc_adapter_check_duration_seconds_count\{[^}]*country="mx"[^}]*\} [1-9]/);
    expect(text).toMatch(/dnc_adapter_outcomes_total\{[^}]*outcome="prohibited"[^}]*\} [1-9]/);
    expect(text).toMatch(/dnc_adapter_provider_errors_total\{[^}]*class="maintenance"[^}]*\} [1-9]/);
    expect(text).toMatch(/dnc_registry_size\{[^}]*\} 2/);
    expect(text).toMatch(/dnc_registry_snapshot_timestamp_seconds\{[^}]*\} 1\d{9}/);
    expect(text).not.toMatch(/5512345678|3331234567/);
  });
});

describe('drills are refused unless enabled', () => {
  const env = isolatedEnv('adapter_nodrill');
  let adapter: RunningAdapter;
  beforeAll(async () => {
    adapter = await startTestAdapter(env, 'co');
  });
  afterAll(async () => {
    await adapter?.shutdown();
    await env.drop();
  });

  it('answers PermissionDenied', async () => {
    const { admin } = adapterClients(adapter.address);
    const err = await admin.setDrill({ failure: registryv1.DrillFailure.UNAVAILABLE }).catch((e) => e);
    expect(err.code).toBe(Code.PermissionDenied);
  });
});
