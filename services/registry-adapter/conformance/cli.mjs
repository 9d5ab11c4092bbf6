#!/usr/bin/env node
// npm run adapter:conformance -- --address HOST:PORT --country CC
//   [--registered N1,N2,...]   numbers known to be in the adapter's registry
//   [--fixture FILE]           registered numbers from a file (one per line)
//   [--load-fixture]           add the numbers through the admin Load first, remove them after
//                              (test deployments only); default fixture: conformance/fixtures/<cc>.txt
//   [--drills]                 the adapter runs with DNC_ENABLE_DRILLS=1: test deadlines and failures
//   [--json]                   machine-readable report
//   [--admin-address HOST:PORT] the adapter's admin listener (Load, drills, Describe), if apart
//   [--tls-dir DIR]            mutual TLS: a certificate allowed to Check (a gateway's or worker's),
//   [--operator-tls-dir DIR]   and the operator's (Describe, Load, drills); tls.crt, tls.key, ca.crt.
//                              Also DNC_CONFORMANCE_TLS_DIR / DNC_CONFORMANCE_OPERATOR_TLS_DIR.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { readFixture, runConformance } from './suite.mjs';

const { values } = parseArgs({
  options: {
    address: { type: 'string' },
    country: { type: 'string' },
    registered: { type: 'string' },
    fixture: { type: 'string' },
    'load-fixture': { type: 'boolean' },
    drills: { type: 'boolean' },
    json: { type: 'boolean' },
    'tls-dir': { type: 'string' },
    'admin-address': { type: 'string' },
    'operator-tls-dir': { type: 'string' },
  },
});
if (!values.address || !values.country || !/^[a-z]{2}$/.test(values.country)) {
  process.stderr.write(
    'usage: adapter:conformance -- --address HOST:PORT --country CC [--registered N1,N2 | --fixture F] [--load-fixture] [--drills]\n',
  );
  process.exit(2);
}
const country = values.country;
let registered = values.registered
  ? values.registered
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean)
  : [];
const defaultFixture = fileURLToPath(new URL(`./fixtures/${country}.txt`, import.meta.url));
const fixture =
  values.fixture ?? (registered.length === 0 && existsSync(defaultFixture) ? defaultFixture : undefined);
if (fixture) registered = [...registered, ...readFixture(fixture)];

const callerDir = values['tls-dir'] ?? process.env.DNC_CONFORMANCE_TLS_DIR;
const operatorDir = values['operator-tls-dir'] ?? process.env.DNC_CONFORMANCE_OPERATOR_TLS_DIR;
if (Boolean(callerDir) !== Boolean(operatorDir)) {
  process.stderr.write('give both --tls-dir and --operator-tls-dir (or neither, for a plaintext stack)\n');
  process.exit(2);
}
const results = await runConformance({
  address: values.address,
  ...(values['admin-address'] ? { adminAddress: values['admin-address'] } : {}),
  ...(callerDir ? { tls: { caller: callerDir, operator: operatorDir } } : {}),
  country,
  registered,
  drills: values.drills === true,
  loadFixture: values['load-fixture'] === true,
});
const failed = results.filter((r) => !r.ok);
if (values.json) {
  process.stdout.write(
    `${JSON.stringify({ country, address: values.address, passed: failed.length === 0, results }, null, 2)}\n`,
  );
} else {
  for (const r of results) {
    const detail = r.ok ? (r.note ? ` (${r.note})` : '') : `\n      ${r.error}`;
    process.stdout.write(`${r.ok ? 'PASS' : 'FAIL'}  ${r.title}  ${r.ms} ms${detail}\n`);
  }
  process.stdout.write(`\n${results.length - failed.length}/${results.length} passed\n`);
}
process.exit(failed.length === 0 ? 0 : 1);
