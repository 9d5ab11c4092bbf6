// The adapter conformance suite: contract tests for any RegistryAdapterService implementation, spoken
// over plain gRPC (@grpc/grpc-js) with the contract's protobuf messages, so an adapter written in any
// language is checked exactly as the platform calls it. See README.md beside this file.
import { readFileSync } from 'node:fs';
import { healthv1, registryv1 } from '@dnc/proto';
import grpc from '@grpc/grpc-js';
import { assert, expectGrpcCode, name } from './assert.mjs';
import { AdapterConnection, errorReason } from './connection.mjs';
import { notYetRegistered } from './fixture.mjs';
import { loadCutShortTest } from './load-cut-short.mjs';
import { phoneListTest } from './phone-list.mjs';

export { AdapterConnection, errorReason };

const { Outcome, AdapterStatus } = registryv1;
const MAX_BATCH = 100_000;

/** Inputs that are not a phone number of any country: every one must be INVALID_*, never SAFE. */
export const GARBAGE = [
  '',
  ' ',
  'abc',
  '+',
  '++',
  '()',
  '-',
  'null',
  '0',
  '00',
  '123',
  '1'.repeat(30),
  '+999 1234 5678',
  "1'; DROP TABLE numbers; --",
  '📞📞📞',
  'x'.repeat(64),
  '+52 55 1234 567a',
  '12345678901234567890',
];

/** Valid numbers of other countries, by country they must NOT be checked against. */
const FOREIGN = {
  us: '+44 20 7946 0958',
  default: '+1 212 555 0123',
};

/** Registered numbers of a fixture file (one per line, `#` comments). */
export function readFixture(file) {
  return readFileSync(file, 'utf8')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'));
}

const isInvalid = (o) => o >= Outcome.INVALID_UNPARSEABLE && o <= Outcome.INVALID_REGISTRY_REJECTED;

/** Deterministic shuffle (the suite must be reproducible). */
function shuffled(items, seed = 7) {
  const out = [...items];
  let s = seed;
  for (let i = out.length - 1; i > 0; i--) {
    s = (s * 1103515245 + 12345) & 0x7fffffff;
    const j = s % (i + 1);
    [out[i], out[j]] = [out[j], out[i]];
  }
  return out;
}

/**
 * The suite's tests in the order they run: `run` gets the connection, the country, the registered numbers
 * and the options, returns an optional note and throws on failure; `when` leaves a test out for options
 * that do not allow it.
 */
const TESTS = [
  {
    title: 'admin Load adds the fixture',
    when: ({ options }) => Boolean(options.loadFixture),
    run: async ({ conn, country, registered, state }) => {
      const added = await notYetRegistered(conn, country, registered);
      const r = await conn.load(country, registryv1.LoadMode.ADD, registered, true);
      // Only once the add committed: a refused add (another load running) leaves nothing to remove.
      state.added = added;
      assert(Number(r.rejected) === 0, `${r.rejected} fixture lines rejected`);
      // Replicas pick a new snapshot up within seconds; wait until this one serves it.
      for (let i = 0; i < 50; i++) {
        const d = await conn.describe();
        if (d.snapshotId === r.snapshotId) return `snapshot ${r.snapshotId}`;
        await new Promise((res) => setTimeout(res, 200));
      }
      throw new Error('the new snapshot was not served within 10 s');
    },
  },
  loadCutShortTest,
  {
    title: 'Describe: identity, status serving, snapshot',
    run: async ({ conn, country, registered, options }) => {
      const described = await conn.describe();
      assert(described.country === country, `country is "${described.country}", expected "${country}"`);
      assert(described.adapterVersion !== '', 'adapter_version is empty');
      assert(
        described.status === AdapterStatus.SERVING,
        `status is ${AdapterStatus[described.status]}; the suite needs a serving adapter`,
      );
      assert(described.snapshotId !== '', 'snapshot_id is empty');
      assert(described.snapshotTime !== undefined, 'snapshot_time is not set');
      assert(
        described.registrySize >= BigInt(options.loadFixture ? registered.length : 0),
        'registry_size is smaller than the fixture',
      );
      return `version ${described.adapterVersion}, snapshot ${described.snapshotId}, size ${described.registrySize}`;
    },
  },
  {
    title: 'gRPC health reports SERVING',
    run: async ({ conn }) => {
      // Health may lag a new snapshot by its probe interval: allow a few seconds.
      for (let i = 0; i < 25; i++) {
        const h = await conn.health();
        if (h.status === healthv1.HealthCheckResponse_ServingStatus.SERVING) return;
        await new Promise((res) => setTimeout(res, 200));
      }
      throw new Error('health is not SERVING');
    },
  },
  {
    title: 'registered numbers are prohibited',
    run: async ({ conn, country, registered }) => {
      assert(registered.length > 0, 'no registered numbers given (--registered or --load-fixture)');
      const r = await conn.check(country, registered);
      assert(r.outcomes.length === registered.length, 'one outcome per input');
      r.outcomes.forEach((o, i) => {
        assert(o === Outcome.PROHIBITED, `registered input #${i} answered ${name(o)}`);
      });
      assert(r.snapshotId !== '', 'snapshot_id of the answer is empty');
    },
  },
  {
    title: 'invalid inputs are invalid with a reason, never safe',
    run: async ({ conn, country }) => {
      const foreign = FOREIGN[country] ?? FOREIGN.default;
      const inputs = [...GARBAGE, foreign];
      const r = await conn.check(country, inputs);
      assert(r.outcomes.length === inputs.length, 'one outcome per input');
      r.outcomes.forEach((o, i) => {
        assert(isInvalid(o), `invalid input #${i} answered ${name(o)}`);
      });
    },
  },
  {
    title: 'every outcome is defined (never UNSPECIFIED) and the order is the input order',
    run: async ({ conn, country, registered }) => {
      const inputs = [...registered, ...GARBAGE, ...registered.map((r) => `${r} `)];
      const single = [];
      for (const input of inputs) {
        const r = await conn.check(country, [input]);
        assert(r.outcomes.length === 1, 'one outcome per input');
        single.push(r.outcomes[0]);
      }
      single.forEach((o, i) => {
        assert(o !== Outcome.UNSPECIFIED && Outcome[o] !== undefined, `input #${i}: outcome ${o}`);
      });
      const order = shuffled(inputs.map((_, i) => i));
      const r = await conn.check(
        country,
        order.map((i) => inputs[i]),
      );
      assert(r.outcomes.length === inputs.length, 'one outcome per input');
      order.forEach((original, position) => {
        assert(
          r.outcomes[position] === single[original],
          `position ${position}: ${name(r.outcomes[position])} in a batch, ${name(single[original])} alone`,
        );
      });
    },
  },
  phoneListTest({ GARBAGE }),
  {
    title: 'duplicates are answered once per occurrence',
    run: async ({ conn, country, registered }) => {
      const one = registered[0] ?? GARBAGE[2];
      const inputs = [one, GARBAGE[2], one, one, GARBAGE[2], one];
      const r = await conn.check(country, inputs);
      assert(
        r.outcomes.length === inputs.length,
        `${r.outcomes.length} outcomes for ${inputs.length} inputs`,
      );
      inputs.forEach((input, i) => {
        const first = inputs.indexOf(input);
        assert(r.outcomes[i] === r.outcomes[first], `duplicate #${i} answered differently`);
      });
    },
  },
  {
    title: `a batch of ${MAX_BATCH.toLocaleString('en')} inputs is answered in order`,
    run: async ({ conn, country, registered }) => {
      const inputs = new Array(MAX_BATCH);
      for (let i = 0; i < MAX_BATCH; i++) {
        inputs[i] =
          i % 10 === 0 && registered.length
            ? registered[(i / 10) % registered.length]
            : GARBAGE[i % GARBAGE.length];
      }
      const started = Date.now();
      const r = await conn.check(country, inputs, 30_000);
      const ms = Date.now() - started;
      assert(r.outcomes.length === MAX_BATCH, `${r.outcomes.length} outcomes`);
      for (let i = 0; i < MAX_BATCH; i++) {
        const o = r.outcomes[i];
        if (i % 10 === 0 && registered.length) assert(o === Outcome.PROHIBITED, `input #${i}: ${name(o)}`);
        else assert(isInvalid(o), `input #${i}: ${name(o)}`);
      }
      return `${ms} ms`;
    },
  },
  {
    title: 'more than the batch limit is refused with INVALID_ARGUMENT',
    run: async ({ conn, country }) => {
      const error = await conn.check(country, new Array(MAX_BATCH + 1).fill('1'), 30_000).then(
        () => undefined,
        (e) => e,
      );
      expectGrpcCode(
        error,
        [grpc.status.INVALID_ARGUMENT, grpc.status.RESOURCE_EXHAUSTED],
        'oversized batch',
      );
    },
  },
  {
    title: '64 characters are counted as Unicode code points: 64 emoji answered, 65 refused',
    run: async ({ conn, country }) => {
      // Two UTF-16 units each: an adapter that counts string.length would refuse the 64.
      const at = '\u{1F4DE}'.repeat(64);
      const r = await conn.check(country, [at]);
      assert(r.outcomes.length === 1 && isInvalid(r.outcomes[0]), `64 emoji: ${name(r.outcomes[0])}`);
      const error = await conn.check(country, [`${at}\u{1F4DE}`]).then(
        () => undefined,
        (e) => e,
      );
      expectGrpcCode(error, [grpc.status.INVALID_ARGUMENT], '65 emoji');
    },
  },
  {
    title: 'a Check for another country is refused with INVALID_ARGUMENT',
    run: async ({ conn, country, registered }) => {
      const other = country === 'zz' ? 'zy' : 'zz';
      const error = await conn.check(other, registered.slice(0, 1)).then(
        () => undefined,
        (e) => e,
      );
      expectGrpcCode(error, [grpc.status.INVALID_ARGUMENT], 'wrong country');
    },
  },
  {
    title: 'the caller deadline is honoured',
    run: async ({ conn, country, registered, options }) => {
      if (options.drills) await conn.setDrill({ latencyMs: 3_000 });
      try {
        const started = Date.now();
        const error = await conn.check(country, registered.length ? registered : ['1'], 250).then(
          () => undefined,
          (e) => e,
        );
        const ms = Date.now() - started;
        if (options.drills || error) {
          expectGrpcCode(error, [grpc.status.DEADLINE_EXCEEDED], 'slow Check');
          assert(ms < 1_500, `the call returned after ${ms} ms`);
        }
      } finally {
        if (options.drills) await conn.setDrill({ clear: true });
      }
      // The adapter keeps serving after abandoned calls.
      const r = await conn.check(country, registered.slice(0, 1));
      assert(r.outcomes.length === Math.min(1, registered.length), 'adapter did not answer after a deadline');
      return options.drills
        ? 'with 3 s drill latency'
        : 'without drills: only checked that the adapter recovers';
    },
  },
  {
    title: 'drill failures answer UNAVAILABLE with the public reason and show in Describe',
    when: ({ options }) => Boolean(options.drills),
    run: async ({ conn, country, registered }) => {
      try {
        await conn.setDrill({ failure: registryv1.DrillFailure.MAINTENANCE });
        const m = await conn.check(country, registered.slice(0, 1)).then(
          () => undefined,
          (e) => e,
        );
        expectGrpcCode(m, [grpc.status.UNAVAILABLE], 'maintenance');
        assert(errorReason(m) === 'country_service_maintenance', `reason ${errorReason(m)}`);
        assert((await conn.describe()).status === AdapterStatus.MAINTENANCE, 'Describe is not MAINTENANCE');
        await conn.setDrill({ failure: registryv1.DrillFailure.UNAVAILABLE });
        const u = await conn.check(country, registered.slice(0, 1)).then(
          () => undefined,
          (e) => e,
        );
        expectGrpcCode(u, [grpc.status.UNAVAILABLE], 'unavailable');
        assert(errorReason(u) === 'country_service_temporarily_unavailable', `reason ${errorReason(u)}`);
      } finally {
        await conn.setDrill({ clear: true });
      }
    },
  },
  {
    title: 'admin Load removes the fixture again',
    when: ({ options }) => Boolean(options.loadFixture),
    run: async ({ conn, country, registered, state }) => {
      // Only what the kit added: a fixture number the registry held before stays registered.
      const added = state.added ?? [];
      if (added.length === 0) return 'every fixture number was registered before: nothing removed';
      // A removal must give its as_of: published as of the current copy, it keeps the copy's time.
      const { snapshotTime } = await conn.registryStatus();
      const r = await conn.load(country, registryv1.LoadMode.REMOVE, added, true, false, snapshotTime);
      const kept = registered.length - added.length;
      return `snapshot ${r.snapshotId}${kept ? `; ${kept} registered before, kept` : ''}`;
    },
  },
];

/**
 * Run the suite. Options: address (host:port), country, registered (numbers known to be in the
 * registry, as the adapter's country writes them), drills (the adapter runs with drills enabled: the
 * deadline test adds latency), loadFixture (add `registered` through the admin Load first and remove
 * at the end those the registry did not hold before; test deployments only), tls ({ caller, operator }: certificate directories for mutual
 * TLS), adminAddress (the admin listener, when apart from address). Returns one result per test; never throws for a failed test.
 */
export async function runConformance(options) {
  const { address, country } = options;
  const registered = options.registered ?? [];
  const conn = new AdapterConnection(address, options.tls, country, options.adminAddress);
  const results = [];
  // What one test leaves for a later one (the fixture numbers the kit added).
  const state = {};
  try {
    for (const { title, when, run } of TESTS) {
      if (when && !when({ options })) continue;
      const started = Date.now();
      try {
        const note = await run({ conn, country, registered, options, state });
        results.push({ title, ok: true, ms: Date.now() - started, ...(note ? { note } : {}) });
      } catch (error) {
        results.push({ title, ok: false, ms: Date.now() - started, error: error?.message ?? String(error) });
      }
    }
  } finally {
    conn.close();
  }
  return results;
}
