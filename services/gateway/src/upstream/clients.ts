import { type Client, createClient, type Transport } from '@connectrpc/connect';
import {
  type AdapterClient,
  adapterIdentity,
  RegistryAdapterCheck,
  rpcTransport,
  type Security,
} from '@dnc/kit';
import { admissionv1, healthv1, jobsv1 } from '@dnc/proto';

export type AdmissionClient = Client<typeof admissionv1.AdmissionService>;
export type JobsClient = Client<typeof jobsv1.JobsService>;
export type { AdapterClient };

/** The Connect clients of the services behind the gateway. */
export interface UpstreamClients {
  admission: AdmissionClient;
  jobs: JobsClient;
  /**
   * Adapter client for an address chosen by admission from discovery (connections are reused); the
   * server there must prove it is the country's adapter before it receives a number.
   */
  adapter(address: string, country: string): AdapterClient;
  /** grpc.health.v1 of admission, for readiness. */
  admissionHealth: Client<typeof healthv1.Health>;
}

export interface UpstreamTransports {
  admission: Transport;
  jobs: Transport;
  adapter(address: string, country: string): Transport;
}

/** Clients over the given transports (tests pass Connect's in-memory router transport). */
export function upstreamClients(transports: UpstreamTransports): UpstreamClients {
  const adapters = new Map<string, AdapterClient>();
  return {
    admission: createClient(admissionv1.AdmissionService, transports.admission),
    jobs: createClient(jobsv1.JobsService, transports.jobs),
    admissionHealth: createClient(healthv1.Health, transports.admission),
    adapter(address, country) {
      const key = `${country} ${address}`;
      let client = adapters.get(key);
      if (!client) {
        client = createClient(RegistryAdapterCheck, transports.adapter(address, country));
        adapters.set(key, client);
      }
      return client;
    },
  };
}

/** Clients over the platform's internal transport (Connect protocol, HTTP/2) to the given addresses. */
export function connectUpstreams(
  admissionAddr: string,
  jobsAddr: string,
  security: Security,
): UpstreamClients {
  return upstreamClients({
    admission: rpcTransport(admissionAddr, [], { security, peer: 'admission' }),
    jobs: rpcTransport(jobsAddr, [], { security, peer: 'job-scheduler' }),
    adapter: (address, country) => rpcTransport(address, [], { security, peer: adapterIdentity(country) }),
  });
}
