import { Health } from '@dnc/api-contract';
import type { HealthState } from '@dnc/kit';
import type { FastifyInstance } from 'fastify';

/** GET /v1/health (liveness: the process answers) and GET /v1/ready (accepts work, store reachable). */
export function systemRoutes(health: HealthState) {
  return async (app: FastifyInstance) => {
    app.get('/v1/health', { schema: { response: { 200: Health } } }, async () => ({ ok: true }));
    app.get('/v1/ready', async (_request, reply) => {
      if (health.serving) return { ok: true };
      return reply.code(503).send({ ok: false, error: 'not_ready' });
    });
  };
}
