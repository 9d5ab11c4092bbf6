import { buildOpenApiDocument } from '@dnc/api-contract';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';

/** The interface description (no authentication) and a docs page rendered from the same document. */
export const openApi = fp(
  async (app: FastifyInstance) => {
    const document = buildOpenApiDocument();
    app.get('/openapi.json', async () => document);
    await app.register(swagger, { mode: 'static', specification: { document: document as never } });
    await app.register(swaggerUi, {
      routePrefix: '/docs',
      uiConfig: { docExpansion: 'list', deepLinking: true },
    });
  },
  { name: 'openapi' },
);
