import {
  AckPolicy,
  DiscardPolicy,
  type JetStreamManager,
  jetstreamManager,
  RetentionPolicy,
  StorageType,
} from '@nats-io/jetstream';
import { type KV, Kvm } from '@nats-io/kv';
import { connect, type NatsConnection, nanos } from '@nats-io/transport-node';

export type { KV, NatsConnection };

/** Names of the NATS objects; a prefix isolates test runs that share one server. */
export function natsNames(prefix = '') {
  return {
    jobsStream: `${prefix}DNC_JOBS`,
    jobsSubject: (country: string) => `${prefix}dnc.jobs.${country}`,
    jobsSubjects: `${prefix}dnc.jobs.>`,
    jobsConsumer: (country: string) => `${prefix}dnc_jobs_workers_${country}`,
    adaptersBucket: `${prefix}dnc_adapters`,
    countryStatusBucket: `${prefix}dnc_country_status`,
  };
}

export async function connectNats(servers: string, name: string): Promise<NatsConnection> {
  return connect({
    servers: servers.split(','),
    name,
    maxReconnectAttempts: -1,
    reconnectTimeWait: 500,
    timeout: 3_000,
  });
}

/** Adapter entries expire when their adapter stops refreshing them (heartbeat every few seconds). */
export const ADAPTER_ENTRY_TTL_MS = 10_000;

/**
 * Create the stream and buckets idempotently: every service may call this at start. The stream is a
 * work queue (a message leaves when acked); Postgres stays the source of truth for job state.
 */
export async function provisionJetStream(nc: NatsConnection, prefix = '', replicas = 1): Promise<void> {
  const names = natsNames(prefix);
  const jsm: JetStreamManager = await jetstreamManager(nc);
  const config = {
    name: names.jobsStream,
    subjects: [names.jobsSubjects],
    retention: RetentionPolicy.Workqueue,
    storage: StorageType.File,
    discard: DiscardPolicy.Old,
    // A republish of the same job id within this window is dropped (Nats-Msg-Id).
    duplicate_window: nanos(10 * 60 * 1000),
    max_age: nanos(48 * 3600 * 1000),
    num_replicas: replicas,
  };
  try {
    await jsm.streams.info(names.jobsStream);
  } catch {
    try {
      await jsm.streams.add(config);
    } catch (error) {
      // Created concurrently by another process: fine if it now exists.
      await jsm.streams.info(names.jobsStream).catch(() => {
        throw error;
      });
    }
  }
  const kvm = new Kvm(nc);
  await kvm.create(names.adaptersBucket, { ttl: ADAPTER_ENTRY_TTL_MS, history: 1, replicas });
  await kvm.create(names.countryStatusBucket, { history: 1, replicas });
}

export async function openBucket(nc: NatsConnection, bucket: string): Promise<KV> {
  return new Kvm(nc).open(bucket);
}

export { AckPolicy };
