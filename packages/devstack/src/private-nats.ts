import path from 'node:path';
import { connectNats, NATS_PROVISIONER, provisionJetStream } from '@dnc/kit';
import type { StackPki } from './identities.js';
import { LocalNatsServer } from './nats-server.js';

/** The identities that use NATS, each with its own user. */
export const NATS_USERS = /^(admission|job-scheduler|job-worker|registry-adapter-[a-z]{2})$/;

/** The stack's own nats-server: a user per identity, the stream and buckets made by the provisioner. */
export async function startPrivateNats(
  pki: StackPki,
  natsPrefix: string | undefined,
  countries: readonly string[],
): Promise<LocalNatsServer> {
  const prefix = natsPrefix ?? '';
  const users = [
    'admission',
    'job-scheduler',
    'job-worker',
    ...countries.map((c) => `registry-adapter-${c}`),
  ];
  const nats = await LocalNatsServer.start({ dir: path.join(pki.dir, 'nats'), prefix, users });
  try {
    const nc = await connectNats(nats.url, NATS_PROVISIONER, nats.credentials(NATS_PROVISIONER));
    try {
      await provisionJetStream(nc, prefix, 1);
    } finally {
      await nc.close();
    }
  } catch (error) {
    await nats.stop();
    throw error;
  }
  return nats;
}
