import type { Client } from '@connectrpc/connect';
import { registryv1 } from '@dnc/proto';
import pg from 'pg';

/**
 * One whole load through an adapter's admin listener: the header, one chunk, the end. A replace sets a
 * test's fixture, whatever was loaded before (allowed older and shrinking).
 */
export function loadWhole(
  admin: Client<typeof registryv1.RegistryAdminService>,
  country: string,
  lines: string[],
  mode: registryv1.LoadMode,
) {
  return admin.load(
    (async function* () {
      const fixture = mode === registryv1.LoadMode.REPLACE ? { allowOlder: true, allowShrink: true } : {};
      yield { part: { case: 'header' as const, value: { country, mode, ...fixture } } };
      yield { part: { case: 'chunk' as const, value: { lines } } };
      yield { part: { case: 'end' as const, value: { lines: BigInt(lines.length) } } };
    })(),
    { timeoutMs: 10_000 },
  );
}

/** Loads holding a country's load lock (a session advisory lock) in the stack's database now. */
export async function loadLocksHeld(databaseUrl: string): Promise<number> {
  const db = new pg.Client({ connectionString: databaseUrl });
  await db.connect();
  try {
    const { rows } = await db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM pg_locks l JOIN pg_database d ON d.oid = l.database
        WHERE l.locktype = 'advisory' AND l.granted AND d.datname = current_database()`,
    );
    return rows[0]!.n;
  } finally {
    await db.end();
  }
}
