import type { NatsConnection } from '@dnc/kit';
import { natsNames } from '@dnc/kit';
import { AckPolicy, type Consumer, jetstream, jetstreamManager } from '@nats-io/jetstream';
import { nanos } from '@nats-io/transport-node';

/**
 * The durable pull consumer of each country's jobs, created, or brought to the configured
 * redelivery bounds when it exists already (another replica made it, or an older release).
 */
export async function jobConsumers(
  nc: NatsConnection,
  options: { prefix: string; countries: string[]; ackWaitMs: number; maxDeliver: number },
): Promise<Consumer[]> {
  const names = natsNames(options.prefix);
  const jsm = await jetstreamManager(nc);
  const js = jetstream(nc);
  const consumers: Consumer[] = [];
  for (const country of options.countries) {
    const config = {
      durable_name: names.jobsConsumer(country),
      filter_subject: names.jobsSubject(country),
      ack_policy: AckPolicy.Explicit,
      ack_wait: nanos(options.ackWaitMs),
      max_deliver: options.maxDeliver,
      max_ack_pending: 1_000,
    };
    try {
      await jsm.consumers.add(names.jobsStream, config);
    } catch {
      await jsm.consumers.update(names.jobsStream, config.durable_name, {
        ack_wait: config.ack_wait,
        max_deliver: config.max_deliver,
        max_ack_pending: config.max_ack_pending,
      });
    }
    consumers.push(await js.consumers.get(names.jobsStream, config.durable_name));
  }
  return consumers;
}
