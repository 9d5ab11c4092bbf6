// The conformance test of a Load cut short (registry_adapter.proto, LoadEnd): an adapter that implements Load
// commits only a stream that ends with its end message. Run with --load-fixture, after the fixture's add.
import { registryv1 } from '@dnc/proto';
import grpc from '@grpc/grpc-js';
import { assert, expectGrpcCode } from './assert.mjs';

const { Outcome } = registryv1;

export const loadCutShortTest = {
  title: 'admin Load without its end message commits nothing',
  when: ({ options }) => Boolean(options.loadFixture),
  run: async ({ conn, country, registered }) => {
    if (registered.length === 0) return 'no fixture numbers: nothing to try';
    const before = (await conn.describe()).snapshotId;
    // A removal of a registered number cut short before its end: committed, the number would be safe. It
    // gives its as_of (a removal without one is refused before its file is read).
    const { snapshotTime } = await conn.registryStatus();
    const cut = await conn
      .load(country, registryv1.LoadMode.REMOVE, registered.slice(0, 1), true, true, snapshotTime)
      .then(
        () => undefined,
        (e) => e,
      );
    expectGrpcCode(cut, [grpc.status.INVALID_ARGUMENT], 'invalid argument');
    assert((await conn.describe()).snapshotId === before, 'a new snapshot was made from a load cut short');
    const [outcome] = (await conn.check(country, registered.slice(0, 1))).outcomes;
    assert(
      outcome === Outcome.PROHIBITED,
      `a registered number is ${Outcome[outcome]} after a load cut short`,
    );
  },
};
