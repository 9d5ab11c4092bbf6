import type { FastifyInstance } from 'fastify';
import { MAX_PASSWORD } from '../domain/password.js';
import { guards, who } from '../session.js';
import { HttpError } from '../upstream.js';
import { body, checkCurrentCode, checkCurrentPassword, type RouteDeps, signInGate } from './deps.js';

/**
 * The signed-in person proves who they are again: the current password, and a code when the second
 * factor is on. An owner's changes that could hand the organization to someone else (an invitation,
 * removing a member, a new API key) need it within the last minutes (session.ts `confirmedOwner`); the
 * sign-in counts as one. Wrong passwords and codes count against the email's lockout and go to the audit
 * log as failed sign-ins do: a stolen session must not be a way to try them.
 */
export function confirmRoutes(app: FastifyInstance, deps: RouteDeps): void {
  const { change } = guards(deps);
  app.post(
    '/api/session/confirm',
    {
      preHandler: change,
      onRequest: signInGate(app, deps),
      schema: { body: body({ password: MAX_PASSWORD * 4, code: 10 }, ['password']) },
    },
    async (request, reply) => {
      const { member, tokenHash } = who(request);
      const b = request.body as { password: string; code?: string };
      if (member.totp && !b.code)
        throw new HttpError(400, 'code_required', 'Give the current code of your authenticator app too.');
      await checkCurrentPassword(deps, request, member, b.password);
      if (member.totp)
        await checkCurrentCode(deps, request, member, b.code ?? '', 'second factor, confirming');
      await deps.sessions.confirm(tokenHash);
      return reply.code(204).send();
    },
  );
}
