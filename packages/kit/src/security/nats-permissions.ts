import { natsNames } from '../nats.js';
import { adapterCountry } from './identity.js';

/** Subjects a NATS user may publish to and subscribe to (NATS authorization, allow lists). */
export interface NatsPermissions {
  publish: string[];
  subscribe: string[];
}

/**
 * The NATS user that creates the stream and the buckets (the migration hook, the local stack),
 * before any service starts. Services themselves may only use what exists.
 */
export const NATS_PROVISIONER = 'provisioner';

/** Each user gets its own reply inbox, so no user can read the answers to another's requests. */
export function natsInboxPrefix(user: string): string {
  return `_INBOX_${user}`;
}

function jsApi(...subjects: string[]): string[] {
  return subjects.map((s) => `$JS.API.${s}`);
}

/** Read a KV bucket: open it, watch it (an ordered push consumer into our inbox), get a key. */
function kvRead(bucket: string): string[] {
  const stream = `KV_${bucket}`;
  return [
    ...jsApi(
      `STREAM.INFO.${stream}`,
      `CONSUMER.CREATE.${stream}`,
      `CONSUMER.CREATE.${stream}.>`,
      `CONSUMER.DELETE.${stream}.>`,
      `DIRECT.GET.${stream}.>`,
      `STREAM.MSG.GET.${stream}`,
    ),
    // Flow-control answers of an ordered consumer.
    `$JS.FC.${stream}.>`,
  ];
}

/** Write keys of a KV bucket (all keys, or `keys` such as `co.>`); a delete is a write too. */
function kvWrite(bucket: string, keys = '>'): string[] {
  return [...jsApi(`STREAM.INFO.KV_${bucket}`), `$KV.${bucket}.${keys}`];
}

/**
 * The narrowest NATS permissions of each identity that uses NATS, for one name prefix. Gateway,
 * quota, operator and dashboard do not use NATS and have no user. Anything not listed is refused
 * by the server: an adapter cannot announce another country, a worker cannot write discovery, no
 * service but the job scheduler can publish work, and nobody but the provisioner can change a
 * stream or a bucket.
 */
export function natsPermissions(user: string, prefix = ''): NatsPermissions | undefined {
  const n = natsNames(prefix);
  const inbox = [`${natsInboxPrefix(user)}.>`];
  const country = adapterCountry(user);
  if (country) {
    return { publish: kvWrite(n.adaptersBucket, `${country}.>`), subscribe: inbox };
  }
  switch (user) {
    case NATS_PROVISIONER:
      return { publish: ['$JS.API.>'], subscribe: inbox };
    case 'admission':
      // Finds adapters; publishes country maintenance windows.
      return {
        publish: [...kvRead(n.adaptersBucket), ...kvWrite(n.countryStatusBucket)],
        subscribe: inbox,
      };
    case 'job-scheduler':
      // Publishes work; reads the queue's depth (the sweeper's lost-message check); hears of messages
      // spent by max_deliver, reads their job id and deletes them (spent-messages.ts).
      return {
        publish: [
          n.jobsSubjects,
          // INFO: the account's limits, which a JetStream manager reads when it opens (no content).
          ...jsApi(
            'INFO',
            `STREAM.INFO.${n.jobsStream}`,
            `CONSUMER.INFO.${n.jobsStream}.*`,
            `STREAM.MSG.GET.${n.jobsStream}`,
            `STREAM.MSG.DELETE.${n.jobsStream}`,
          ),
        ],
        subscribe: [...inbox, `$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.${n.jobsStream}.*`],
      };
    case 'job-worker':
      // Pulls work through its durable consumers, acks it, finds adapters and reads the maintenance
      // windows operators declared.
      return {
        publish: [
          ...jsApi(
            'INFO',
            `STREAM.INFO.${n.jobsStream}`,
            `CONSUMER.CREATE.${n.jobsStream}.>`,
            `CONSUMER.DURABLE.CREATE.${n.jobsStream}.*`,
            `CONSUMER.INFO.${n.jobsStream}.*`,
            `CONSUMER.MSG.NEXT.${n.jobsStream}.*`,
          ),
          `$JS.ACK.${n.jobsStream}.>`,
          ...kvRead(n.adaptersBucket),
          ...kvRead(n.countryStatusBucket),
        ],
        subscribe: inbox,
      };
    default:
      return undefined;
  }
}
