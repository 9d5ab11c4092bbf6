import { type Client, createClient } from '@connectrpc/connect';
import { grpcTransport } from '@dnc/kit';
import { admissionv1, healthv1, jobsv1, registryv1 } from '@dnc/proto';

export type AdmissionClient = Client<typeof admissionv1.AdmissionService>;
export type JobsClient = Client<typeof jobsv1.JobsService>;
export type AdapterClient = Client<typeof registryv1.RegistryAdapterService>;

export interface Upstreams {
  admission: AdmissionClient;
  jobs: JobsClient;
  /** Adapter client for an address chosen by admission from discovery (connections are reused). */
  adapter(address: string): AdapterClient;
  /** grpc.health.v1 of admission, for readiness. */
  admissionHealth: Client<typeof healthv1.Health>;
}

export function createUpstreams(admissionAddr: string, jobsAddr: string): Upstreams {
  const admissionTransport = grpcTransport(admissionAddr);
  const adapters = new Map<string, AdapterClient>();
  return {
    admission: createClient(admissionv1.AdmissionService, admissionTransport),
    jobs: createClient(jobsv1.JobsService, grpcTransport(jobsAddr)),
    admissionHealth: createClient(healthv1.Health, admissionTransport),
    adapter(address) {
      let client = adapters.get(address);
      if (!client) {
        client = createClient(registryv1.RegistryAdapterService, grpcTransport(address));
        adapters.set(address, client);
      }
      return client;
    },
  };
}
