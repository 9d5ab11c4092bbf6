import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { Redis } from 'ioredis';
import type pg from 'pg';
import type { Violation } from '../invariants.js';

// Where a phone number or a key must never be found in plaintext (ARCHITECTURE: "never log, trace or
// put in metrics a phone number, an API key, or a request body"; v2 input and result are encrypted at
// rest). A violation names the canary by its index in the caller's list, never by its value.

/** Every form in which a canary could have been stored: text, hex (bytea), base64. */
function encodings(canary: string): Buffer[] {
  const b = Buffer.from(canary, 'utf8');
  return [b, Buffer.from(b.toString('hex')), Buffer.from(b.toString('base64').replace(/=+$/, ''))];
}

function hits(haystack: Buffer, canaries: readonly string[]): number[] {
  const found: number[] = [];
  canaries.forEach((canary, i) => {
    if (encodings(canary).some((form) => haystack.includes(form))) found.push(i);
  });
  return found;
}

const leak = (where: string, indexes: number[]): Violation[] =>
  indexes.map((i) => ({ invariant: 'no_plaintext', detail: `canary #${i} found in ${where}` }));

/**
 * Every value of every table of the stack's database, text as is and bytea as raw bytes — except the
 * adapters' registry copies (`registry_<cc>`): they hold the registry's own list, loaded by the
 * operator, and a canary that is a registered number is rightly there.
 */
export async function postgresLeaks(db: pg.Client, canaries: readonly string[]): Promise<Violation[]> {
  if (canaries.length === 0) return [];
  const tables = await db.query<{ schema: string; name: string }>(
    `SELECT table_schema AS schema, table_name AS name FROM information_schema.tables
     WHERE table_type = 'BASE TABLE' AND table_schema NOT IN ('pg_catalog', 'information_schema')
       AND table_schema NOT LIKE 'registry\\_%'`,
  );
  const out: Violation[] = [];
  for (const t of tables.rows) {
    const ident = `"${t.schema}"."${t.name}"`;
    const found = new Set<number>();
    const rows = await db.query({ text: `SELECT * FROM ${ident}`, rowMode: 'array' });
    for (const row of rows.rows as unknown[][]) {
      for (const value of row) {
        if (value === null) continue;
        const bytes = Buffer.isBuffer(value)
          ? value
          : Buffer.from(typeof value === 'object' ? JSON.stringify(value) : String(value));
        for (const i of hits(bytes, canaries)) found.add(i);
      }
    }
    out.push(...leak(`postgres ${ident}`, [...found]));
  }
  return out;
}

/** Redis keys (and their values) under the stack's prefix. */
export async function redisLeaks(
  url: string,
  prefix: string,
  canaries: readonly string[],
): Promise<Violation[]> {
  if (canaries.length === 0) return [];
  const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1, connectTimeout: 2_000 });
  const out: Violation[] = [];
  try {
    await redis.connect();
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
      cursor = next;
      for (const key of keys) {
        const type = await redis.type(key);
        const value =
          type === 'string'
            ? ((await redis.get(key)) ?? '')
            : type === 'hash'
              ? JSON.stringify(await redis.hgetall(key))
              : type === 'zset'
                ? JSON.stringify(await redis.zrange(key, 0, -1))
                : type === 'list'
                  ? JSON.stringify(await redis.lrange(key, 0, -1))
                  : type === 'set'
                    ? JSON.stringify(await redis.smembers(key))
                    : '';
        out.push(...leak(`redis key ${key}`, hits(Buffer.from(`${key} ${value}`), canaries)));
      }
    } while (cursor !== '0');
  } finally {
    redis.disconnect();
  }
  return out;
}

/** Every message still held by the stack's streams (work queue and KV buckets), subject and data. */
export async function natsLeaks(
  url: string,
  prefix: string,
  canaries: readonly string[],
): Promise<Violation[]> {
  if (canaries.length === 0 || !prefix) return [];
  const nc = await connect({ servers: url, timeout: 3_000 });
  const out: Violation[] = [];
  try {
    const jsm = await jetstreamManager(nc);
    for await (const name of jsm.streams.names()) {
      if (!name.startsWith(prefix) && !name.startsWith(`KV_${prefix}`)) continue;
      const info = await jsm.streams.info(name);
      const found = new Set<number>();
      for (let seq = info.state.first_seq; seq <= info.state.last_seq && seq > 0; seq++) {
        const m = await jsm.streams.getMessage(name, { seq }).catch(() => undefined);
        if (!m) continue;
        for (const i of hits(Buffer.concat([Buffer.from(m.subject), Buffer.from(m.data)]), canaries))
          found.add(i);
      }
      out.push(...leak(`nats stream ${name}`, [...found]));
    }
  } finally {
    await nc.close();
  }
  return out;
}

/** An API key as admission issues it: `dnc_<12 hex>_<43 base64url>`. */
const API_KEY = /dnc_[0-9a-f]{12}_[A-Za-z0-9_-]{43}/;

/** Each process's log output: no canary, no API key. */
export function logLeaks(
  logs: readonly { source: string; text: string }[],
  canaries: readonly string[],
): Violation[] {
  const out: Violation[] = [];
  for (const { source, text } of logs) {
    out.push(...leak(`the logs of ${source}`, hits(Buffer.from(text), canaries)));
    if (API_KEY.test(text))
      out.push({ invariant: 'no_plaintext', detail: `an API key in the logs of ${source}` });
  }
  return out;
}
