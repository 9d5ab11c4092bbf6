import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { normalEmail } from '../domain/email.js';
import { MAX_PASSWORD } from '../domain/password.js';
import { tokenHash } from '../domain/tokens.js';
import { accept, inspect } from '../invitations.js';
import {
  checkCsrf,
  clearSessionCookie,
  guards,
  readSession,
  SESSION_COOKIE,
  sameOrigin,
  startSession,
  who,
} from '../session.js';
import { HttpError } from '../upstream.js';
import {
  body,
  checkCurrentCode,
  DEVICE_COOKIE,
  failureCount,
  iso,
  lockedError,
  type RouteDeps,
  rememberDevice,
  signInGate,
} from './deps.js';

const wrongCredentials = () =>
  new HttpError(401, 'invalid_credentials', 'The email or the password is wrong.');

/** Sign-in, the second factor, sign-out, and accepting an invitation. */
export function sessionRoutes(app: FastifyInstance, deps: RouteDeps): void {
  signInRoutes(app, deps);
  signOutRoutes(app, deps);
  acceptInvitationRoutes(app, deps);
}

/** The session of this browser, sign-in with a password, then the second factor when it is on. */
function signInRoutes(app: FastifyInstance, deps: RouteDeps): void {
  const { signedIn } = guards(deps);

  app.get('/api/session', { preHandler: signedIn }, async (request) => {
    const { member, session } = who(request);
    const org = await deps.upstreams.organization
      .getOrganization({ orgId: member.orgId })
      .catch(() => undefined);
    return {
      member: {
        id: member.memberId,
        email: member.email,
        role: member.role,
        totp_enabled: !!member.totp,
      },
      organization: org
        ? { name: org.name, suspended: org.suspended, activation_complete: org.activationComplete }
        : null,
      csrf_token: session.csrfToken,
    };
  });

  app.post(
    '/api/session',
    { schema: { body: body({ email: 300, password: MAX_PASSWORD * 4 }) }, onRequest: signInGate(app, deps) },
    async (request, reply) => {
      sameOrigin(deps, request);
      const { email, password } = request.body as { email: string; password: string };
      return signInWithPassword(deps, request, reply, email, password);
    },
  );

  app.post(
    '/api/session/totp',
    { schema: { body: body({ code: 10 }) }, onRequest: signInGate(app, deps) },
    async (request, reply) => {
      const pending = await readSession(deps, request, 'mfa');
      if (!pending) throw new HttpError(401, 'unauthenticated', 'Sign in with your password first.');
      checkCsrf(deps, request, pending.session);
      const { member } = pending;
      const { code } = request.body as { code: string };
      // Codes count where the password did (the email's, or this browser's when it is one of the member's;
      // the password step did not clear it): once locked, every answer is the lockout, a right code's too,
      // and the half session ends. A wrong code is a 401 here, audited as "second factor", locked or not.
      const failures = await checkCurrentCode(deps, request, member, code, 'second factor', {
        wrongStatus: 401,
        lockedTarget: 'second factor',
        onLocked: async () => {
          await deps.sessions.end(pending.tokenHash);
          clearSessionCookie(reply);
        },
      });
      await failures.clear();
      await deps.sessions.end(pending.tokenHash);
      const started = await startSession(deps, reply, member, 'full');
      if (!started) {
        clearSessionCookie(reply);
        throw new HttpError(401, 'unauthenticated', 'Your sessions were ended meanwhile; sign in again.');
      }
      await deps.members.signedIn(member.memberId);
      await rememberDevice(deps, request, reply, member.memberId);
      await deps.audit.record(member.orgId, member.email, 'sign_in', 'with second factor');
      return { stage: 'full', csrf_token: started.csrfToken };
    },
  );
}

/** Sign out here, or everywhere (every session of the person). */
function signOutRoutes(app: FastifyInstance, deps: RouteDeps): void {
  const { change } = guards(deps);

  // Each end of sessions and its audit row are committed together or not at all.
  app.post('/api/session/sign-out', { preHandler: change }, async (request, reply) => {
    const { member, tokenHash: hash } = who(request);
    await deps.transaction(async (tx) => {
      await deps.sessions.end(hash, tx);
      await deps.audit.record(member.orgId, member.email, 'sign_out', '', tx);
    });
    clearSessionCookie(reply);
    return reply.code(204).send();
  });

  app.post('/api/session/sign-out-everywhere', { preHandler: change }, async (request, reply) => {
    const { member } = who(request);
    await deps.transaction(async (tx) => {
      const ended = await deps.sessions.endAll(
        member.memberId,
        undefined,
        request.cookies[DEVICE_COOKIE],
        tx,
      );
      await deps.audit.record(member.orgId, member.email, 'sign_out_everywhere', `${ended} sessions`, tx);
    });
    clearSessionCookie(reply);
    return reply.code(204).send();
  });
}

/** The invitation page: what the link is for, then a password for the new member. */
function acceptInvitationRoutes(app: FastifyInstance, deps: RouteDeps): void {
  app.post(
    '/api/invitations/inspect',
    { schema: { body: body({ token: 100 }) }, onRequest: signInGate(app, deps) },
    async (request) => {
      sameOrigin(deps, request);
      const invitation = await inspect(deps, (request.body as { token: string }).token);
      const org = await deps.upstreams.organization
        .getOrganization({ orgId: invitation.orgId })
        .catch(() => undefined);
      return {
        email: invitation.email,
        role: invitation.role,
        organization: org?.name ?? null,
        expires_at: iso(invitation.expiresAt),
      };
    },
  );

  app.post(
    '/api/invitations/accept',
    { schema: { body: body({ token: 100, password: MAX_PASSWORD * 4 }) }, onRequest: signInGate(app, deps) },
    async (request, reply) => {
      sameOrigin(deps, request);
      const { token, password } = request.body as { token: string; password: string };
      const member = await accept(deps, token, password);
      return reply.code(201).send({ email: member.email, role: member.role });
    },
  );
}

/**
 * A password sign-in: lockout first, the hash verified (against a decoy for an unknown email, so both
 * take the same time), then a new session — `mfa` when the second factor is on, `full` otherwise. The
 * lockout and the failures are the email's, or this browser's own when it signed in as the email's member
 * before (device cookie): a lock of the email, which anyone can cause, does not keep the member out.
 */
async function signInWithPassword(
  deps: RouteDeps,
  request: FastifyRequest,
  reply: FastifyReply,
  given: string,
  password: string,
) {
  const email = normalEmail(given);
  if (!email) throw wrongCredentials();
  const failures = await failureCount(deps, request, email);
  if (await failures.isLocked()) throw lockedError();
  const member = await deps.members.byEmail(email);
  const ok = await deps.verify(password, member?.passwordHash ?? deps.decoyHash);
  if (!member || !ok) {
    const nowLocked = await failures.recordFailure();
    if (member) await deps.audit.record(member.orgId, email, 'sign_in_failed', nowLocked ? 'locked' : '');
    throw nowLocked ? lockedError() : wrongCredentials();
  }
  // Wrong guesses sent at the same time may have locked the email while this hash was verified: once
  // locked, every answer is the lockout, so none tells the right password apart.
  if (await failures.isLocked()) throw lockedError();
  // With a second factor the sign-in is not over: its codes keep counting (cleared by a right code).
  if (!member.totp) await failures.clear();
  // Never reuse a session across a sign-in (fixation): an earlier one of this browser ends.
  const previous = request.cookies[SESSION_COOKIE];
  if (previous) await deps.sessions.end(tokenHash(previous));
  // Created only if no password change, second factor or sign out everywhere ended the person's sessions
  // while this one was judged on what `member` said: it is refused as a wrong password would be.
  const started = await startSession(deps, reply, member, member.totp ? 'mfa' : 'full');
  if (!started) throw wrongCredentials();
  if (member.totp) return { stage: 'mfa', csrf_token: started.csrfToken };
  await deps.members.signedIn(member.memberId);
  await rememberDevice(deps, request, reply, member.memberId);
  await deps.audit.record(member.orgId, member.email, 'sign_in');
  return { stage: 'full', csrf_token: started.csrfToken };
}
