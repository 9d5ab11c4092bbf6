import { timestampDate } from '@bufbuild/protobuf/wkt';
import { createClient } from '@connectrpc/connect';
import { adapterIdentity, type Identity } from '@dnc/kit';
import { admissionv1, healthv1, platformv1 } from '@dnc/proto';
import { type AdminEnv, type Command, operatorTransport } from '../cli.js';

async function probe(env: AdminEnv, name: Identity, address: string) {
  const transport = operatorTransport(env, address, name);
  const health = createClient(healthv1.Health, transport);
  const info = createClient(platformv1.ServiceInfoService, transport);
  try {
    const [h, i] = await Promise.all([
      health.check({ service: '' }, { timeoutMs: 2000 }),
      info.getServiceInfo({}, { timeoutMs: 2000 }),
    ]);
    return {
      service: name,
      address,
      status: h.status === healthv1.HealthCheckResponse_ServingStatus.SERVING ? 'serving' : 'not_serving',
      version: i.version,
      ...(i.country ? { country: i.country } : {}),
      started_at: i.startedAt ? timestampDate(i.startedAt).toISOString() : undefined,
    };
  } catch {
    return { service: name, address, status: 'unreachable' };
  }
}

export const statusCommand: Command = {
  name: 'status',
  usage: 'status',
  options: {},
  async run(_flags, env) {
    const services = await Promise.all([
      probe(env, 'admission', env.admission),
      probe(env, 'quota', env.quota),
      probe(env, 'job-scheduler', env.jobs),
      probe(env, 'dashboard', env.dashboard),
    ]);
    // Adapters are found through discovery, as every other caller finds them.
    let adapters: Awaited<ReturnType<typeof probe>>[] = [];
    try {
      const admin = createClient(
        admissionv1.AdmissionAdminService,
        operatorTransport(env, env.admission, 'admission'),
      );
      const { countries } = await admin.listCountries({}, { timeoutMs: 3000 });
      adapters = await Promise.all(
        countries
          .filter((c) => c.adapterAdminAddress || c.adapterAddress)
          .map((c) => probe(env, adapterIdentity(c.country), c.adapterAdminAddress || c.adapterAddress)),
      );
    } catch {
      // admission unreachable: already reported above
    }
    return { services: [...services, ...adapters] };
  },
};
