import { createClient } from '@connectrpc/connect';
import { healthv1 } from '@dnc/proto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Harness } from './harness.js';

// A graceful shutdown drains the calls in flight, then closes what they use. Admission's key-usage
// writer was closed before the drain (its closer was registered after the listeners, and closers run
// in reverse): a key that authenticated a call finishing during the drain was noted and never written,
// so the dashboard showed it unused since its previous flush. The call is held in flight for real: its
// key lookup waits on a table lock taken by another session.
//
// And while that call was in flight, the data listener still took new calls: each listener's closer
// waited for every call of the process, and the admin listener's ran first, so the data listener had
// neither stopped accepting nor sent its GOAWAY. A caller pinned to this process by its HTTP/2 session
// (every caller reaches admission through one Service address) kept sending it new calls, and read its
// NOT_SERVING health over that session, for as long as the drain lasted.

const h = new Harness();

beforeAll(async () => {
  // No timed flush during the test: only the one at shutdown can write the key's last use.
  await h.start({ DNC_KEY_USAGE_FLUSH_MS: '600000' });
});
afterAll(async () => {
  await h.stop();
});

describe('admission shutdown', () => {
  it('answers the call in flight, takes no new one, and writes the last use of its key', async () => {
    const { keyId, apiKey } = await h.customer(['mx']);
    // A caller with a session open before the drain (the gateway's health checks of admission).
    const health = createClient(healthv1.Health, h.transport(await h.pki.security('gateway')));
    expect((await health.check({ service: '' })).status).toBe(
      healthv1.HealthCheckResponse_ServingStatus.SERVING,
    );
    const locker = new pg.Client({ connectionString: h.databaseUrl });
    await locker.connect();
    try {
      await locker.query('BEGIN');
      await locker.query('LOCK TABLE admission.api_keys IN ACCESS EXCLUSIVE MODE');
      const call = h.clients().admission.authenticate({ apiKey, clientAddress: '10.0.0.9' });
      await expect
        .poll(
          async () =>
            (
              await locker.query(
                `SELECT count(*)::int AS n FROM pg_stat_activity
                 WHERE datname = current_database() AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()`,
              )
            ).rows[0].n,
          { timeout: 5_000 },
        )
        .toBeGreaterThan(0);

      const down = h.instances[0]!.service.shutdown('test: drain with a call in flight');
      await new Promise((r) => setTimeout(r, 300));
      // Its session had a GOAWAY and the listener is closed: the call is not served by this process.
      await expect(health.check({ service: '' }, { timeoutMs: 2_000 })).rejects.toThrow();
      await locker.query('COMMIT');

      expect((await call).keyId).toBe(keyId);
      await down;
    } finally {
      await locker.end();
    }
    const row = await h.sql('SELECT last_used_at FROM admission.api_keys WHERE key_id = $1', [keyId]);
    expect(row.rows[0].last_used_at).toBeInstanceOf(Date);
  });
});
