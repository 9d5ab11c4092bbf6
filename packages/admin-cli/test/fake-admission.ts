import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import type { ServiceImpl } from '@connectrpc/connect';
import { connectNodeAdapter } from '@connectrpc/connect-node';
import { admissionv1 } from '@dnc/proto';
import { afterEach } from 'vitest';
import type { AdminEnv } from '../src/cli.js';

const servers: http2.Http2Server[] = [];
const sessions = new Set<http2.ServerHttp2Session>();
afterEach(async () => {
  for (const session of sessions) session.destroy();
  sessions.clear();
  for (const s of servers.splice(0)) await new Promise((r) => s.close(r));
});

/**
 * An AdmissionAdminService of the test's own (`methods`) over plaintext HTTP/2, and the CLI's environment
 * pointing at it: the CLI's real client and transport, answers chosen by the test. The real service's side
 * of each behaviour is tested in services/admission/test/operator-create.int.test.ts.
 */
export async function fakeAdmission(
  methods: Partial<ServiceImpl<typeof admissionv1.AdmissionAdminService>>,
): Promise<AdminEnv> {
  const server = http2.createServer(
    connectNodeAdapter({ routes: (router) => router.service(admissionv1.AdmissionAdminService, methods) }),
  );
  servers.push(server);
  // The CLI's transport keeps its session open: ended with the test, or close() would wait for it.
  server.on('session', (session) => sessions.add(session));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    admission: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    security: () => ({ mode: 'plaintext', identity: 'operator', trustDomain: 'dnc.test' }),
  } as unknown as AdminEnv;
}
