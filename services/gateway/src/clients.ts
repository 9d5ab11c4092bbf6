import { type Client, createClient } from '@connectrpc/connect';
import { type Registry, rpcTransport } from '@dnc/kit';
import { admissionv1, healthv1, jobsv1, registryv1 } from '@dnc/proto';
import { type BatchedCalls, batchedCalls } from './batched.js';

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
  /** Admit, Check and Complete batched across the requests in flight (the scrub path uses these). */
  batched: BatchedCalls;
}

export function createUpstreams(admissionAddr: string, jobsAddr: string, metrics?: Registry): Upstreams {
  const admissionTransport = rpcTransport(admissionAddr);
  const adapters = new Map<string, AdapterClient>();
  const upstreams: Omit<Upstreams, 'batched'> = {
    admission: createClient(admissionv1.AdmissionService, admissionTransport),
    jobs: createClient(jobsv1.JobsService, rpcTransport(jobsAddr)),
    admissionHealth: createClient(healthv1.Health, admissionTransport),
    adapter(address) {
      let client = adapters.get(address);
      if (!client) {
        client = createClient(registryv1.RegistryAdapterService, rpcTransport(address));
        adapters.set(address, client);
      }
      return client;
    },
  };
  return { ...upstreams, batched: batchedCalls(upstreams, metrics) };
}
