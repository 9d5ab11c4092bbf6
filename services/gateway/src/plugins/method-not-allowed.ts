import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { sendMapped, toHttp } from '../errors.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** The answer of a request no route takes: 405 with `Allow` for a known path, else 404. */
    refuseUnrouted(request: FastifyRequest, reply: FastifyReply): FastifyReply;
  }
}

interface KnownRoute {
  pattern: RegExp;
  methods: Set<string>;
}

/**
 * The one not-found handler: a known path asked with another method is 405 with `Allow` (the methods
 * of every route registered after this plugin), anything else a JSON 404.
 */
export const methodNotAllowed = fp(
  async (app: FastifyInstance) => {
    const known: KnownRoute[] = [];
    app.addHook('onRoute', (route) => {
      const methods = Array.isArray(route.method) ? route.method : [route.method];
      const source = `^${route.url.replace(/:[A-Za-z_]+/g, '[^/]+')}$`;
      const existing = known.find((k) => k.pattern.source === source);
      if (existing) for (const m of methods) existing.methods.add(m);
      else known.push({ pattern: new RegExp(source), methods: new Set(methods) });
    });

    const refuse = (request: FastifyRequest, reply: FastifyReply) => {
      const path = request.url.split('?')[0] ?? request.url;
      const route = known.find((k) => k.pattern.test(path));
      if (route && !route.methods.has(request.method)) {
        const methods = [...route.methods].sort();
        reply.header('allow', methods.join(', '));
        return sendMapped(reply, toHttp('method_not_allowed', `Use ${methods.join(' or ')}.`));
      }
      return sendMapped(reply, toHttp('not_found', 'No such endpoint.'));
    };
    app.decorate('refuseUnrouted', refuse);
    app.setNotFoundHandler(refuse);
  },
  { name: 'method-not-allowed' },
);
