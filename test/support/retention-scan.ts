import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { Redis } from 'ioredis';
import pg from 'pg';
import { TEST_NATS_URL, TEST_REDIS_URL } from './stack.js';

/** Every form in which a canary could have been stored: text, hex (bytea), base64. */
function encodings(canary: string): string[] {
  const b = Buffer.from(canary, 'utf8');
  return [canary, b.toString('hex'), b.toString('base64').replace(/=+$/, '')];
}

/** Rows of every table of every schema of the database that contain a canary (as text or bytea). */
export async function findInPostgres(databaseUrl: string, canaries: string[]): Promise<string[]> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  const found: string[] = [];
  try {
    const { rows: tables } = await client.query<{ schema: string; name: string }>(
      `SELECT table_schema AS schema, table_name AS name FROM information_schema.tables
        WHERE table_type = 'BASE TABLE' AND table_schema NOT IN ('pg_catalog', 'information_schema')`,
    );
    for (const t of tables) {
      const ident = `"${t.schema}"."${t.name}"`;
      for (const canary of canaries) {
        for (const form of encodings(canary)) {
          const { rows } = await client.query(`SELECT 1 FROM ${ident} AS r WHERE r::text ILIKE $1 LIMIT 1`, [
            `%${form}%`,
          ]);
          if (rows.length) found.push(`${ident} contains ${canary}`);
        }
      }
    }
  } finally {
    await client.end();
  }
  return found;
}

/** Redis keys or values that contain a canary. */
export async function findInRedis(canaries: string[]): Promise<string[]> {
  const redis = new Redis(TEST_REDIS_URL);
  const found: string[] = [];
  try {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'COUNT', 1000);
      cursor = next;
      for (const key of keys) {
        const type = await redis.type(key);
        let value = '';
        if (type === 'string') value = (await redis.get(key)) ?? '';
        else if (type === 'hash') value = JSON.stringify(await redis.hgetall(key));
        else if (type === 'zset') value = JSON.stringify(await redis.zrange(key, 0, -1, 'WITHSCORES'));
        else if (type === 'list') value = JSON.stringify(await redis.lrange(key, 0, -1));
        else if (type === 'set') value = JSON.stringify(await redis.smembers(key));
        for (const canary of canaries)
          if (`${key} ${value}`.includes(canary)) found.push(`redis ${key} contains ${canary}`);
      }
    } while (cursor !== '0');
  } finally {
    redis.disconnect();
  }
  return found;
}

/** Messages of the streams (work queue and KV buckets) of a NATS prefix that contain a canary. */
export async function findInNats(prefix: string, canaries: string[]): Promise<string[]> {
  const nc = await connect({ servers: TEST_NATS_URL });
  const found: string[] = [];
  try {
    const jsm = await jetstreamManager(nc);
    for await (const name of jsm.streams.names()) {
      if (!name.startsWith(prefix) && !name.startsWith(`KV_${prefix}`)) continue;
      const info = await jsm.streams.info(name);
      for (let seq = info.state.first_seq; seq <= info.state.last_seq && seq > 0; seq++) {
        const m = await jsm.streams.getMessage(name, { seq }).catch(() => undefined);
        if (!m) continue;
        const text = Buffer.from(m.data).toString('utf8');
        for (const canary of canaries) {
          for (const form of encodings(canary))
            if (text.includes(form) || m.subject.includes(form))
              found.push(`nats ${name}#${seq} contains ${canary}`);
        }
      }
    }
  } finally {
    await nc.close();
  }
  return found;
}
