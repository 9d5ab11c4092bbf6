import net from 'node:net';
import { describe, expect, it } from 'vitest';
import { DashboardClient } from '../../../test/support/dashboard.js';
import { MAX_CONCURRENT_HASHES, MAX_WAITING_HASHES } from '../src/domain/password.js';
import { startDashboard } from '../src/server.js';
import { config, person, withDashboard } from './sign-in-harness.js';

// Found by a read-only review of resource bounds (2026-12-03). The dashboard is the one public HTTP
// server besides the gateway: it had no bound on how long a request may take to arrive (fastify's
// default is none), and its password checks queued without a bound behind two derivations at a time.
withDashboard();

describe('the dashboard under slow and many clients', () => {
  it('closes a socket whose request body does not arrive within DNC_DASHBOARD_REQUEST_TIMEOUT_MS', async () => {
    const dash = await startDashboard(config({ DNC_DASHBOARD_REQUEST_TIMEOUT_MS: '1000' }));
    try {
      const socket = net.connect(dash.port, '127.0.0.1');
      await new Promise((r) => socket.once('connect', r));
      const closed = new Promise<number>((r) => socket.once('close', () => r(Date.now())));
      socket.on('error', () => {});
      socket.resume();
      const t0 = Date.now();
      socket.write(
        'POST /api/session HTTP/1.1\r\nHost: dashboard\r\nContent-Type: application/json\r\nContent-Length: 200\r\n\r\n{',
      );
      // One byte every 200 ms: always active, never done.
      const trickle = setInterval(() => socket.writable && socket.write(' '), 200);
      try {
        const at = await Promise.race([closed, new Promise<number>((r) => setTimeout(() => r(-1), 6_000))]);
        expect(at).toBeGreaterThan(0);
        expect(at - t0).toBeLessThan(4_000);
      } finally {
        clearInterval(trickle);
        socket.destroy();
      }
    } finally {
      await dash.service.shutdown('test end');
    }
  });

  it('refuses password checks past its queue at once (503 busy, Retry-After), judges nothing of them, and recovers', async () => {
    // The production cost (2^17, ~0.3-0.5 s a derivation here), so a burst outruns two at a time.
    const dash = await startDashboard(config({ DNC_SCRYPT_LOG_N: '17' }));
    try {
      const base = `http://127.0.0.1:${dash.port}`;
      const burst = MAX_CONCURRENT_HASHES + MAX_WAITING_HASHES + 24;
      const answers = await Promise.all(
        Array.from({ length: burst }, async (_, i) => {
          const t0 = Date.now();
          const r = await new DashboardClient(base).signIn(`nobody-${i}@example.com`, 'a wrong password');
          return { ...r, ms: Date.now() - t0 };
        }),
      );
      const busy = answers.filter((r) => r.status === 503);
      expect(busy.length).toBeGreaterThan(0);
      for (const r of busy) {
        expect(r.body).toMatchObject({ error: 'busy' });
        expect(r.headers.get('retry-after')).toBe('1');
        // Refused at once, not after waiting behind the queue.
        expect(r.ms).toBeLessThan(2_000);
      }
      // The rest were judged: wrong credentials, nothing else.
      expect(answers.filter((r) => r.status !== 503).every((r) => r.status === 401)).toBe(true);
      expect(answers.filter((r) => r.status === 401).length).toBeGreaterThanOrEqual(
        MAX_CONCURRENT_HASHES + MAX_WAITING_HASHES,
      );
      // Drained: a real person signs in.
      const { email, password } = await person();
      expect((await new DashboardClient(base).signIn(email, password)).status).toBe(200);
    } finally {
      await dash.service.shutdown('test end');
    }
  }, 120_000);
});
