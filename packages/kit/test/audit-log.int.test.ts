import { randomUUID } from 'node:crypto';
import { createClient, createRouterTransport } from '@connectrpc/connect';
import { platformv1 } from '@dnc/proto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { auditService, PostgresAuditLog } from '../src/security/audit.js';

// Found by a review of the operator tools (2026-12-05): `dnc-admin audit` could read a log only from its
// first row, so it showed the oldest events, or paged through the whole append-only log to reach the
// newest. ListAuditEvents now answers the newest first, paging backwards (newest_first, before_id).
const DATABASE_URL = process.env['DATABASE_URL'] ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const schema = `audit_${randomUUID().slice(0, 8)}`;
const pool = new pg.Pool({ connectionString: DATABASE_URL, max: 2 });
const client = createClient(
  platformv1.AuditService,
  createRouterTransport((router) =>
    router.service(platformv1.AuditService, auditService(new PostgresAuditLog(pool, schema, 'quota'))),
  ),
);

beforeAll(async () => {
  await pool.query(`CREATE SCHEMA ${schema}`);
  await pool.query(
    `CREATE TABLE ${schema}.audit_log (id bigserial PRIMARY KEY, at timestamptz NOT NULL DEFAULT clock_timestamp(),
       caller text NOT NULL, subject text NOT NULL DEFAULT '', method text NOT NULL,
       targets jsonb NOT NULL DEFAULT '{}', outcome text NOT NULL, call_id uuid NOT NULL)`,
  );
  const log = new PostgresAuditLog(pool, schema, 'quota');
  for (let i = 1; i <= 25; i++)
    await log.append({
      caller: 'operator',
      subject: '',
      method: 'dnc.quota.v1.QuotaAdminService/SetLimit',
      targets: { org_id: `o-${i}` },
      outcome: 'ok',
      callId: randomUUID(),
    });
  // A second apart: rows appended within one millisecond share the time `since` is given in (a Timestamp
  // read through a JavaScript Date), and a bound at one row's time would take its neighbour too.
  await pool.query(
    `UPDATE ${schema}.audit_log SET at = '2026-12-01T00:00:00Z'::timestamptz + id * interval '1 second'`,
  );
});

afterAll(async () => {
  await pool.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  await pool.end();
});

const ids = (r: platformv1.ListAuditEventsResponse) => r.events.map((e) => Number(e.id));

describe('ListAuditEvents', () => {
  it('newest_first answers the newest events in descending order, paging backwards below before_id', async () => {
    expect(ids(await client.listAuditEvents({ newestFirst: true, limit: 10 }))).toEqual([
      25, 24, 23, 22, 21, 20, 19, 18, 17, 16,
    ]);
    expect(ids(await client.listAuditEvents({ newestFirst: true, beforeId: 16n, limit: 10 }))).toEqual([
      15, 14, 13, 12, 11, 10, 9, 8, 7, 6,
    ]);
    expect(ids(await client.listAuditEvents({ newestFirst: true, beforeId: 6n, limit: 10 }))).toEqual([
      5, 4, 3, 2, 1,
    ]);
    // `since` bounds it the same way.
    const [, , third] = (await client.listAuditEvents({ limit: 3 })).events;
    const since = third!.at;
    expect(ids(await client.listAuditEvents({ newestFirst: true, beforeId: 6n, since, limit: 10 }))).toEqual([
      5, 4, 3,
    ]);
  });

  // Found with it: the query ordered by its output's id::text, so a page past the ninth row went
  // 1, 10, 11, ..., 19, 2, 20 and the next page began after the wrong row (rows skipped).
  it('without it, ascending pages after after_id, in numeric order across digit counts', async () => {
    expect(ids(await client.listAuditEvents({ afterId: 5n, limit: 10 }))).toEqual([
      6, 7, 8, 9, 10, 11, 12, 13, 14, 15,
    ]);
    expect(ids(await client.listAuditEvents({ afterId: 20n, limit: 3 }))).toEqual([21, 22, 23]);
  });
});
