import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import pg from 'pg';

/** Drop the database named in the URL (a stack's own database: tests and the benchmark). */
export async function dropDatabase(databaseUrl: string): Promise<void> {
  const url = new URL(databaseUrl);
  const name = url.pathname.slice(1);
  url.pathname = '/postgres';
  const client = new pg.Client({ connectionString: url.toString() });
  await client.connect();
  try {
    await client.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
  } finally {
    await client.end();
  }
}

/** Remove the stream and KV buckets of one NATS prefix. */
export async function dropNatsPrefix(natsUrl: string, prefix: string): Promise<void> {
  if (!prefix) return;
  const nc = await connect({ servers: natsUrl });
  try {
    const jsm = await jetstreamManager(nc);
    for await (const name of jsm.streams.names()) {
      if (name.startsWith(prefix) || name.startsWith(`KV_${prefix}`))
        await jsm.streams.delete(name).catch(() => {});
    }
  } finally {
    await nc.close();
  }
}
