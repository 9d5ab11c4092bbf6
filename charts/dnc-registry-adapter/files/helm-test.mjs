// `helm test` of one adapter release: through the adapter's Service, the way the platform calls it.
//   1. gRPC health of dnc.registry.v1.RegistryAdapterService is SERVING;
//   2. Describe names this release's country, status SERVING, a registry snapshot with a time;
//   3. Check of an unparseable input answers an invalid outcome from that snapshot, never SAFE.
// It prints outcomes and counts only, never a phone number of the registry.
// Runs in the dnc-scrub image (cwd /app), whose production dependencies hold the Connect client and
// the generated contracts.
import { createClient } from '@connectrpc/connect';
import { adapterIdentity, grpcTransport, TlsMaterial } from '@dnc/kit';
import { healthv1, registryv1 } from '@dnc/proto';

const address = process.env.DNC_ADAPTER_ADDRESS;
const country = process.env.DNC_TEST_COUNTRY;
const trustDomain = process.env.DNC_TRUST_DOMAIN ?? 'dnc.internal';
const options = { timeoutMs: 5000 };

/**
 * Mutual TLS as the platform calls the adapter, with the certificate the chart mounts (DNC_TLS_DIR):
 * the `conformance` identity, which the authorization table allows Check and Describe on the data
 * plane and nothing else. The server must prove it is registry-adapter-<country>. Unset: plaintext
 * (a development stack).
 */
function transportAs(dir) {
  if (!dir) return grpcTransport(address);
  const material = TlsMaterial.load(dir, trustDomain);
  const security = { mode: 'mtls', identity: material.identity, trustDomain, material };
  return grpcTransport(address, [], { security, peer: adapterIdentity(country) });
}
const transport = transportAs(process.env.DNC_TLS_DIR);

function fail(message) {
  console.error(`FAIL ${message}`);
  process.exit(1);
}

const health = createClient(healthv1.Health, transport);
const served = await health
  .check({ service: 'dnc.registry.v1.RegistryAdapterService' }, options)
  .catch((error) => fail(`health check: ${error.code ?? ''} ${error.rawMessage ?? error.message}`));
if (served.status !== healthv1.HealthCheckResponse_ServingStatus.SERVING) {
  fail(`health of RegistryAdapterService is ${healthv1.HealthCheckResponse_ServingStatus[served.status]}`);
}
console.log('ok health SERVING');

const adapter = createClient(registryv1.RegistryAdapterService, transport);
const described = await adapter.describe({}, options).catch((error) => fail(`Describe: ${error.message}`));
if (described.country !== country) fail(`Describe names country ${described.country}, expected ${country}`);
if (described.status !== registryv1.AdapterStatus.SERVING) {
  fail(`Describe status is ${registryv1.AdapterStatus[described.status]} (a registry must be loaded)`);
}
if (!described.snapshotId || !described.snapshotTime) fail('Describe reports no registry snapshot');
const snapshotAt = new Date(Number(described.snapshotTime.seconds) * 1000).toISOString();
console.log(`ok Describe ${country} SERVING, snapshot ${snapshotAt}, ${described.registrySize} numbers`);

const checked = await adapter
  .check({ country, phones: ['not-a-number'] }, options)
  .catch((error) => fail(`Check: ${error.message}`));
const [outcome] = checked.outcomes;
if (checked.outcomes.length !== 1) fail(`Check answered ${checked.outcomes.length} outcomes for 1 input`);
if (outcome !== registryv1.Outcome.INVALID_UNPARSEABLE) {
  fail(`Check of an unparseable input answered ${registryv1.Outcome[outcome]}`);
}
if (checked.snapshotId !== described.snapshotId) fail('Check answered from another snapshot than Describe');
console.log('ok Check unparseable -> INVALID_UNPARSEABLE');
