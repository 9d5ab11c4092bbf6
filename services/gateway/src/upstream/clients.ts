import { type Client, createClient, type Transport } from '@connectrpc/connect';
import { rpcTransport } from '@dnc/kit';
import { admissionv1, healthv1, jobsv1, registryv1 } from '@dnc/proto';

export type AdmissionClient = Client<typeof admissionv1.AdmissionService>;
export type JobsClient = Client<typeof jobsv1.JobsService>;
export type AdapterClient = Client<typeof registryv1.RegistryAdapterService>;

/** The Connect clients of the services behind the gateway. */
export interface UpstreamClients {
  admission: AdmissionClient;
  jobs: JobsClient;
  /** Adapter client for an address chosen by admission from discovery (connections are reused). */
  adapter(address: string): AdapterClient;
  /** grpc.health.v1 of admission, for readiness. */
  admissionHealth: Client<typeof healthv1.Health>;
}

export interface UpstreamTransports {
  admission: Transport;
  jobs: Transport;
  adapter(address: string): Transport;
}

/** Clients over the given transports (tests pass Connect's in-memory router transport). */
export function upstreamClients(transports: UpstreamTransports): UpstreamClients {
  const adapters = new Map<string, AdapterClient>();
  return {
    admission: createClient(admissionv1.AdmissionService, transports.admission),
    jobs: createClient(jobsv1.JobsService, transports.jobs),
    admissionHealth: createClient(healthv1.Health, transports.admission),
    adapter(address) {
      let client = adapters.get(address);
      if (!client) {
        client = createClient(registryv1.RegistryAdapterService, transports.adapter(address));
        adapters.set(address, client);
      }
      return client;
    },
  };
}

/** Clients over the platform's internal transport (Connect protocol, HTTP/2) to the given addresses. */
export function connectUpstreams(admissionAddr: string, jobsAddr: string): UpstreamClients {
  return upstreamClients({
    admission: rpcTransport(admissionAddr),
    jobs: rpcTransport(jobsAddr),
    adapter: (address) => rpcTransport(address),
  });
}
