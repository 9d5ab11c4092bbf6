import type { PoolClient } from '@dnc/kit';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { MAX_PASSWORD, passwordProblem } from '../domain/password.js';
import { qrPath } from '../domain/qr.js';
import { newTotpSecret, totpStep, totpUri } from '../domain/totp.js';
import { openSeed } from '../second-factor.js';
import {
  clearSessionCookie,
  guards,
  renewSession,
  type SignedIn,
  setSessionCookie,
  who,
} from '../session.js';
import type { SessionListing } from '../store/sessions.js';
import { HttpError } from '../upstream.js';
import {
  body,
  checkCurrentCode,
  checkCurrentPassword,
  DEVICE_COOKIE,
  iso,
  type RouteDeps,
  signInGate,
  UUID,
} from './deps.js';

/** What every signed-in person manages of their own: password, second factor and sessions. */
export function meRoutes(app: FastifyInstance, deps: RouteDeps): void {
  const { change } = guards(deps);
  sessionListRoutes(app, deps);

  app.post(
    '/api/me/password',
    {
      preHandler: change,
      onRequest: signInGate(app, deps),
      schema: { body: body({ current_password: MAX_PASSWORD * 4, new_password: MAX_PASSWORD * 4 }) },
    },
    async (request, reply) => {
      const { member } = who(request);
      const b = request.body as { current_password: string; new_password: string };
      await checkCurrentPassword(deps, request, member, b.current_password);
      const problem = passwordProblem(b.new_password, member.email);
      if (problem) throw new HttpError(400, 'weak_password', problem);
      const passwordHash = await deps.hash(b.new_password);
      // Whoever knew the old password is signed out; this browser goes on under a new session. The password
      // alone is a confirmation only while there is no second factor (POST /api/session/confirm asks both).
      return renewAfter(deps, request, reply, 'password_changed', !member.totp, (tx) =>
        deps.members.setPassword(member.memberId, passwordHash, tx),
      );
    },
  );

  /**
   * Step 1 of the second factor: a new secret to put into an authenticator app (not active yet), as the
   * setup key, the otpauth URI and a QR code of that URI drawn by the page.
   */
  app.post('/api/me/totp/setup', { preHandler: change }, async (request) => {
    const { member } = who(request);
    if (member.totp) throw new HttpError(409, 'totp_enabled', 'The second factor is on already.');
    const secret = newTotpSecret();
    await deps.members.setPendingTotp(member.memberId, deps.totpKeys.seal(secret, member.memberId));
    const uri = totpUri(secret, member.email);
    // In this response only (no-store like every /api response; never logged), as text and as a QR code.
    return { secret, uri, qr: qrPath(uri) };
  });

  /**
   * Step 2: a code from the app proves it holds the secret, and the current password that the person
   * turning it on is the member (as for a password change or turning it off): from now on sign-in asks
   * for a code. Without the password, a stolen session (an unlocked computer, a browser extension) could
   * bind the account to the thief's app and, with every other session ended below, lock the member out
   * for good (there is no recovery but an operator's). Every other session of the person ends: one
   * opened with a stolen password alone must not outlive the second factor meant to stop it; this browser
   * goes on under a new session (`renewAfter`), confirmed: the password and a code are what a confirmation
   * asks now.
   */
  app.post(
    '/api/me/totp/enable',
    {
      preHandler: change,
      onRequest: signInGate(app, deps),
      schema: { body: body({ code: 10, password: MAX_PASSWORD * 4 }) },
    },
    async (request, reply) => {
      const { member } = who(request);
      const b = request.body as { code: string; password: string };
      await checkCurrentPassword(deps, request, member, b.password);
      const pending = member.totpPending;
      if (!pending) throw new HttpError(409, 'totp_not_set_up', 'Start the set-up again.');
      const secret = openSeed(deps.totpKeys, request, member.memberId, pending);
      const step = totpStep(secret, b.code);
      if (step === undefined)
        throw new HttpError(400, 'invalid_code', 'The code is wrong; try the current one.');
      return renewAfter(deps, request, reply, 'totp_enabled', true, async (tx) => {
        if (!(await deps.members.enableTotp(member.memberId, pending, step, tx)))
          throw new HttpError(
            409,
            'totp_not_set_up',
            'The set-up was started again elsewhere; use the new one.',
          );
      });
    },
  );

  /**
   * Turning it off asks the password and a current code, as a confirmation does. Found by a review
   * (2026-12-05): the password alone turned it off, so a stolen session with a phished or reused password
   * could remove the factor meant to stop exactly that. Every session ends and this browser goes on under
   * a new one, as when it is turned on: half sessions waiting for a code of the factor gone end with them,
   * and a sign-in judged while it was on creates none (the sessions epoch).
   */
  app.post(
    '/api/me/totp/disable',
    {
      preHandler: change,
      onRequest: signInGate(app, deps),
      schema: { body: body({ password: MAX_PASSWORD * 4, code: 10 }) },
    },
    async (request, reply) => {
      const { member } = who(request);
      const b = request.body as { password: string; code: string };
      if (!member.totp) throw new HttpError(409, 'totp_not_enabled', 'The second factor is off already.');
      await checkCurrentPassword(deps, request, member, b.password);
      await checkCurrentCode(deps, request, member, b.code, 'second factor, turning it off');
      return renewAfter(deps, request, reply, 'totp_disabled', true, (tx) =>
        deps.members.disableTotp(member.memberId, tx),
      );
    },
  );
}

/**
 * A change of the person's credentials (`change`), after which every session of the person ends, this one
 * too, and this browser goes on under a new session (a new cookie and CSRF token, answered for the page to
 * go on with). A copy of the old cookie is worth nothing (OWASP: a new session id after a privilege change;
 * found by a review, 2026-12-05). The browser keeps its device cookie. `confirmed` when the change proved
 * who the person is as POST /api/session/confirm would. The change, the sessions' renewal and the audit
 * row are one transaction, committed together or not at all; the cookie is set once they are.
 */
async function renewAfter(
  deps: RouteDeps,
  request: FastifyRequest,
  reply: FastifyReply,
  action: 'password_changed' | 'totp_enabled' | 'totp_disabled',
  confirmed: boolean,
  change: (tx: PoolClient) => Promise<void>,
): Promise<{ csrf_token: string }> {
  const signedIn = who(request);
  const { member } = signedIn;
  const keepDevice = request.cookies[DEVICE_COOKIE];
  const renewed = await deps.transaction(async (tx) => {
    await change(tx);
    const next = await renewSession(deps, request, signedIn, { confirmed, keepDevice }, tx);
    await deps.audit.record(member.orgId, member.email, action, '', tx);
    return next;
  });
  // Another session ended this one while the change was made: the change stands, this browser signs in.
  if (!renewed) {
    clearSessionCookie(reply);
    throw new HttpError(401, 'unauthenticated', 'Your session was ended meanwhile; sign in again.');
  }
  setSessionCookie(reply, renewed.token);
  return { csrf_token: renewed.csrfToken };
}

const listed = (s: SessionListing) => ({
  id: s.id,
  /** False while the password was given and the second factor is still awaited. */
  complete: s.stage === 'full',
  user_agent: s.userAgent,
  signed_in_at: iso(s.createdAt),
  last_seen_at: iso(s.lastSeenAt),
  expires_at: iso(s.expiresAt),
  current: s.current,
});

/**
 * The person's live sessions (the browser that opened each, when, when last used), and ending one of the
 * others: a session one does not recognise ends without signing out everywhere. Only one's own sessions,
 * by a random id; one's current session is ended by signing out.
 */
function sessionListRoutes(app: FastifyInstance, deps: RouteDeps): void {
  const { signedIn, change } = guards(deps);
  app.get('/api/me/sessions', { preHandler: signedIn }, async (request) => {
    const { member, tokenHash } = who(request);
    return { sessions: (await deps.sessions.list(member.memberId, tokenHash)).map(listed) };
  });

  app.post('/api/me/sessions/:id/end', { preHandler: change }, async (request, reply) => {
    const { member, tokenHash } = who(request);
    const { id } = request.params as { id: string };
    const ended = UUID.test(id) ? await endOther(deps, who(request), id) : undefined;
    if (!ended) {
      const mine =
        UUID.test(id) &&
        (await deps.sessions.list(member.memberId, tokenHash)).some((s) => s.current && s.id === id);
      if (mine)
        throw new HttpError(409, 'current_session', 'This is the session you are using: sign out instead.');
      throw new HttpError(404, 'session_not_found', 'No such session of yours; it may have ended already.');
    }
    return reply.code(204).send();
  });
}

/**
 * One of the person's other sessions ended, by its id, with its audit row: committed together or not at
 * all. Undefined, and nothing recorded, when the person has no such other session.
 */
async function endOther(deps: RouteDeps, { member, tokenHash }: SignedIn, id: string) {
  return deps.transaction(async (tx) => {
    const ended = await deps.sessions.endOne(member.memberId, id, tokenHash, tx);
    if (ended)
      await deps.audit.record(
        member.orgId,
        member.email,
        'session_ended',
        `signed in ${iso(ended.createdAt)}`,
        tx,
      );
    return ended;
  });
}
