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
import { NATS_PROVISIONER, natsInboxPrefix } from './security/nats-permissions.js';

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

/** A NATS user (DNC_NATS_USER / DNC_NATS_PASSWORD); each service has its own, with its own permissions. */
export interface NatsCredentials {
  user?: string | undefined;
  password?: string | undefined;
}

/** This process's NATS user from its configuration (DNC_NATS_USER / DNC_NATS_PASSWORD), if any. */
export function natsCredentials(config: {
  DNC_NATS_USER?: string | undefined;
  DNC_NATS_PASSWORD?: string | undefined;
}): NatsCredentials {
  return { user: config.DNC_NATS_USER, password: config.DNC_NATS_PASSWORD };
}

export async function connectNats(
  servers: string,
  name: string,
  credentials: NatsCredentials = {},
): Promise<NatsConnection> {
  const { user, password } = credentials;
  return connect({
    servers: servers.split(','),
    name,
    maxReconnectAttempts: -1,
    reconnectTimeWait: 500,
    timeout: 3_000,
    ...(user ? { user, pass: password ?? '', inboxPrefix: natsInboxPrefix(user) } : {}),
  });
}

/** Adapter entries expire when their adapter stops refreshing them (heartbeat every few seconds). */
export const ADAPTER_ENTRY_TTL_MS = 10_000;

/**
 * Create the stream and buckets idempotently: every service may call this at start. The stream is a
 * work queue (a message leaves when acked); Postgres stays the source of truth for job state.
 */
export async function provisionJetStream(
  nc: NatsConnection,
  prefix = '',
  replicas = 1,
  /** A service with its own NATS user may not create streams: the provisioner did (devstack, charts). */
  service: { DNC_NATS_USER?: string | undefined } = {},
): Promise<void> {
  if (service.DNC_NATS_USER && service.DNC_NATS_USER !== NATS_PROVISIONER) return;
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
  // Buckets are created only when missing: a service's NATS user may look at a bucket, not change it.
  const kvm = new Kvm(nc);
  const buckets = [
    [names.adaptersBucket, { ttl: ADAPTER_ENTRY_TTL_MS, history: 1, replicas }],
    [names.countryStatusBucket, { history: 1, replicas }],
  ] as const;
  for (const [bucket, options] of buckets) {
    const exists = await jsm.streams.info(`KV_${bucket}`).then(
      () => true,
      () => false,
    );
    if (!exists) await kvm.create(bucket, options);
    await refuseRollups(jsm, `KV_${bucket}`);
  }
}

/**
 * A bucket's stream refuses the `Nats-Rollup` header (the KV client creates it allowing them): a put with
 * `Nats-Rollup: all` by any writer of one key would purge the whole bucket, every other country's
 * discovery entries included, though its user may write only its own country's keys. Nothing here purges
 * a key (deletes are markers), so nothing needs them. Existing buckets are changed too.
 */
async function refuseRollups(jsm: JetStreamManager, stream: string): Promise<void> {
  const { config } = await jsm.streams.info(stream);
  if (config.allow_rollup_hdrs) await jsm.streams.update(stream, { ...config, allow_rollup_hdrs: false });
}

export async function openBucket(nc: NatsConnection, bucket: string): Promise<KV> {
  return new Kvm(nc).open(bucket);
}

export { AckPolicy };
