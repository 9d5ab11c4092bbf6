import { readFileSync } from 'node:fs';
import { FINGERPRINT_VERSION_PATTERN, parseConfig } from '@dnc/kit';
import { describe, expect, it } from 'vitest';
import { isValidFingerprint } from '../../admission/src/domain/idempotency.js';
import { gatewayConfig } from '../src/config.js';
import { fingerprint } from '../src/fingerprint.js';

const chart = (file: string) =>
  readFileSync(new URL(`../../../charts/dnc-scrub/${file}`, import.meta.url), 'utf8');
const env = (over: Record<string, string>) => ({
  DNC_FINGERPRINT_SECRET: 'a fingerprint secret of the test',
  ...over,
});

// The gateway writes `<version>:<hex>` with every idempotency claim; admission refuses a fingerprint it cannot
// read (400, "fingerprint is malformed"). Found by a review (2026-12-03): the chart's default version "1" passed
// the gateway's check and failed admission's, so every POST /v1/scrub and /v2/scrub of a default Helm install
// was a 400.
describe('the fingerprint version: one rule for the gateway, admission and the chart', () => {
  it("the chart's default version is one the gateway accepts and admission reads", () => {
    const version = /^\s*fingerprintVersion:\s*"?([^"\s]+)"?\s*$/m.exec(chart('values.yaml'))?.[1];
    expect(version).toBeDefined();
    const config = parseConfig(gatewayConfig, env({ DNC_FINGERPRINT_VERSION: version! }));
    const fp = fingerprint(config.DNC_FINGERPRINT_SECRET, config.DNC_FINGERPRINT_VERSION, 'mx', [
      '5512345678',
    ]);
    expect(isValidFingerprint(fp)).toBe(true);
  });

  it('a version admission cannot read is refused at the gateway start, and by the chart schema', () => {
    for (const version of ['1', 'x1', 'v', 'v12345', 'V1']) {
      expect(() => parseConfig(gatewayConfig, env({ DNC_FINGERPRINT_VERSION: version })), version).toThrow();
      expect(
        () => parseConfig(gatewayConfig, env({ DNC_FINGERPRINT_PREVIOUS_VERSION: version })),
        version,
      ).toThrow();
    }
    const schema = JSON.parse(chart('values.schema.json'));
    expect(schema.properties.config.properties.fingerprintVersion.pattern).toBe(
      `^${FINGERPRINT_VERSION_PATTERN}$`,
    );
    const pattern = new RegExp(schema.properties.config.properties.fingerprintVersion.pattern);
    for (const version of ['1', 'x1', 'v', 'v12345']) expect(pattern.test(version), version).toBe(false);
    for (const version of ['v1', 'v2', 'v9999']) {
      expect(pattern.test(version), version).toBe(true);
      const config = parseConfig(gatewayConfig, env({ DNC_FINGERPRINT_VERSION: version }));
      expect(
        isValidFingerprint(fingerprint(config.DNC_FINGERPRINT_SECRET, version, 'co', ['3001234567'])),
      ).toBe(true);
    }
  });
});

// Found by a review (2026-12-03): a previous secret set without its version was ignored in silence, and a
// previous version equal to the current one made every stored fingerprint of that version a mismatch:
// exact retries refused 409 idempotency_key_reused for as long as their records live (31 days for v2).
describe('a fingerprint secret rotation is configured whole or refused at start', () => {
  const previous = 'the previous fingerprint secret';
  it('the previous secret and version go together, and the version is not the current one', () => {
    expect(() => parseConfig(gatewayConfig, env({ DNC_FINGERPRINT_PREVIOUS_SECRET: previous }))).toThrow(
      /go together/,
    );
    expect(() => parseConfig(gatewayConfig, env({ DNC_FINGERPRINT_PREVIOUS_VERSION: 'v1' }))).toThrow();
    expect(() =>
      parseConfig(
        gatewayConfig,
        env({ DNC_FINGERPRINT_PREVIOUS_SECRET: previous, DNC_FINGERPRINT_PREVIOUS_VERSION: 'v1' }),
      ),
    ).toThrow(/new DNC_FINGERPRINT_VERSION/);
    const rotating = parseConfig(
      gatewayConfig,
      env({
        DNC_FINGERPRINT_VERSION: 'v2',
        DNC_FINGERPRINT_PREVIOUS_SECRET: previous,
        DNC_FINGERPRINT_PREVIOUS_VERSION: 'v1',
      }),
    );
    expect(rotating.DNC_FINGERPRINT_PREVIOUS_VERSION).toBe('v1');
    expect(parseConfig(gatewayConfig, env({})).DNC_FINGERPRINT_PREVIOUS_SECRET).toBeUndefined();
  });
});
