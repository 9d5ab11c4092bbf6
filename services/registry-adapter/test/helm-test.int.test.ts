import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { Code, ConnectError } from '@connectrpc/connect';
import { registryv1 } from '@dnc/proto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT } from '../../../test/support/stack.js';
import type { RunningAdapter } from '../src/index.js';
import {
  adapterClients,
  conformanceTls,
  isolatedEnv,
  loadLines,
  startTestAdapter,
} from './support/adapter.js';

const run = promisify(execFile);
const SCRIPT = readFileSync(`${ROOT}/charts/dnc-registry-adapter/files/helm-test.mjs`, 'utf8');

/** The chart's `helm test` script, run as its Pod runs it (node -e, from the root of the installed tree). */
async function helmTest(
  address: string,
  country: string,
  tlsDir = conformanceTls().conformance,
): Promise<{ code: number; out: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, ['--input-type=module', '-e', SCRIPT], {
      cwd: ROOT,
      env: {
        ...process.env,
        DNC_ADAPTER_ADDRESS: address,
        DNC_TEST_COUNTRY: country,
        // Mutual TLS with the one certificate the chart mounts: the `conformance` identity, which the
        // authorization table allows Check and Describe on the data plane.
        DNC_TLS_DIR: tlsDir,
      },
    });
    return { code: 0, out: stdout + stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, out: e.stdout + e.stderr };
  }
}

// charts/dnc-registry-adapter `helm test`: passes against a serving adapter, fails against one without a
// registry (it never answers safe) and against another country's adapter.
describe('the adapter chart helm test script against a real adapter', () => {
  const env = isolatedEnv('helmtest');
  let adapter: RunningAdapter;
  beforeAll(async () => {
    adapter = await startTestAdapter(env, 'co');
  });
  afterAll(async () => {
    await adapter?.shutdown();
    await env.drop();
  });

  it('fails while no registry is loaded, naming the status', async () => {
    const result = await helmTest(adapter.address, 'co');
    expect(result.code).toBe(1);
    expect(result.out).toMatch(
      /FAIL (health of RegistryAdapterService is NOT_SERVING|Describe status is UNAVAILABLE)/,
    );
  });

  // Found by a review (2026-12-03): every adapter release keeps a `conformance` certificate, and the
  // authorization table lets it Check any adapter: whoever held one release's Secret could read every
  // country's registry, 100,000 numbers a call, without quota or audit. It is answered about inputs that are
  // not numbers only; a batch with one number is refused whole, nothing looked up.
  it('the conformance identity is never answered about a number', async () => {
    await loadLines(adapter.address, 'co', registryv1.LoadMode.REPLACE, ['+57 310 555 0000']);
    const { conformance } = adapterClients(adapter.address);
    for (const phones of [['+57 310 555 0000'], ['not-a-number', '310 555 0001']]) {
      const err = await conformance.check({ country: 'co', phones }).catch((e) => e);
      expect(err).toBeInstanceOf(ConnectError);
      expect(err.code).toBe(Code.PermissionDenied);
    }
    const fine = await conformance.check({ country: 'co', phones: ['not-a-number', '12'] });
    expect(
      fine.outcomes.every((o) => o !== registryv1.Outcome.SAFE && o !== registryv1.Outcome.PROHIBITED),
    ).toBe(true);
    // The platform's own caller is answered as before.
    const asGateway = await adapterClients(adapter.address).adapter.check({
      country: 'co',
      phones: ['+57 310 555 0000'],
    });
    expect(asGateway.outcomes).toEqual([registryv1.Outcome.PROHIBITED]);
  });

  it('passes once a registry is loaded, and prints no registered number', async () => {
    await loadLines(adapter.address, 'co', registryv1.LoadMode.REPLACE, ['+57 310 555 0000']);
    let result = await helmTest(adapter.address, 'co');
    for (let i = 0; i < 20 && result.code !== 0; i++) {
      await new Promise((r) => setTimeout(r, 250)); // the loaded snapshot is swapped in within a poll
      result = await helmTest(adapter.address, 'co');
    }
    expect(result.code, result.out).toBe(0);
    expect(result.out).toMatch(
      /ok health SERVING\nok Describe co SERVING, snapshot \d{4}-\d\d-\d\dT[\d:.]+Z, 1 numbers\nok Check unparseable/,
    );
    expect(result.out).not.toContain('555');
  });

  it('is refused with a certificate the table does not allow to Check and Describe (the operator)', async () => {
    const result = await helmTest(adapter.address, 'co', conformanceTls().operator);
    expect(result.code).toBe(1);
    expect(result.out).toMatch(
      /FAIL Check: .*operator may not call dnc.registry.v1.RegistryAdapterService\/Check/,
    );
  });

  it('fails against the adapter of another country: its certificate is not registry-adapter-mx', async () => {
    const result = await helmTest(adapter.address, 'mx');
    expect(result.code).toBe(1);
    expect(result.out).toMatch(/FAIL health check: .*not the expected registry-adapter-mx/);
  });
});
