import type { PoolClient } from '@dnc/kit';
import type { FastifyReply, FastifyRequest, preHandlerAsyncHookHandler } from 'fastify';
import { mayChange, type OrganizationChange } from './domain/roles.js';
import { isToken, newToken, sameSecret, tokenHash } from './domain/tokens.js';
import type { Member, MemberStore } from './store/members.js';
import {
  CONFIRMATION_MINUTES,
  type Session,
  type SessionStage,
  type SessionStore,
} from './store/sessions.js';
import { HttpError } from './upstream.js';

/**
 * The session cookie. `__Host-` makes the browser refuse it unless it is Secure, for Path=/ and without
 * Domain: no other host or path can set or shadow it. Chromium and Firefox accept Secure cookies from
 * http://localhost and http://127.0.0.1 (a "potentially trustworthy" origin), so the same cookie works in
 * development over plain HTTP; production is HTTPS only.
 */
export const SESSION_COOKIE = '__Host-dnc_session';
export const CSRF_HEADER = 'x-csrf-token';

export interface SignedIn {
  member: Member;
  session: Session;
  tokenHash: Buffer;
}

declare module 'fastify' {
  interface FastifyRequest {
    signedIn?: SignedIn;
  }
}

export interface SessionDeps {
  sessions: SessionStore;
  members: MemberStore;
  /** Origin of the dashboard (`https://dashboard.example.com`): state changes from elsewhere are refused. */
  origin: string;
}

const cookieOptions = {
  path: '/',
  secure: true,
  httpOnly: true,
  sameSite: 'strict' as const,
};

/**
 * Start a session (`mfa` until the second factor, `full` after): cookie set, CSRF token returned. Undefined,
 * and nothing started, when all the member's sessions were ended since `member` was read (a password
 * change, the second factor turned on, sign out everywhere): what was judged may no longer hold.
 */
export async function startSession(
  deps: SessionDeps,
  reply: FastifyReply,
  member: Member,
  stage: SessionStage,
): Promise<{ csrfToken: string } | undefined> {
  const token = newToken();
  const csrfToken = newToken();
  const created = await deps.sessions.create({
    tokenHash: tokenHash(token),
    memberId: member.memberId,
    orgId: member.orgId,
    sessionsEpoch: member.sessionsEpoch,
    stage,
    csrfToken,
    userAgent: reply.request.headers['user-agent'] ?? '',
  });
  if (!created) return undefined;
  setSessionCookie(reply, token);
  return { csrfToken };
}

/**
 * This browser's session under a new token after a change of the person's credentials, in the change's
 * transaction `tx` (store `sessions.renew`: every session of the person ends, this one too, and the new
 * one is created): its token and CSRF token, for the cookie to be set once `tx` is committed
 * (`setSessionCookie`). `confirmed` when the change proved who the person is as POST
 * /api/session/confirm would. Undefined when the session had ended meanwhile.
 */
export async function renewSession(
  deps: SessionDeps,
  request: FastifyRequest,
  signedIn: SignedIn,
  options: { confirmed: boolean; keepDevice: unknown },
  tx: PoolClient,
): Promise<{ token: string; csrfToken: string } | undefined> {
  const token = newToken();
  const csrfToken = newToken();
  const renewed = await deps.sessions.renew(
    signedIn.member.memberId,
    signedIn.tokenHash,
    { tokenHash: tokenHash(token), csrfToken, userAgent: request.headers['user-agent'] ?? '' },
    options,
    tx,
  );
  return renewed ? { token, csrfToken } : undefined;
}

export function setSessionCookie(reply: FastifyReply, token: string): void {
  reply.setCookie(SESSION_COOKIE, token, cookieOptions);
}

export function clearSessionCookie(reply: FastifyReply): void {
  reply.clearCookie(SESSION_COOKIE, cookieOptions);
}

/** The session of the request's cookie, in the given stage, with its member; undefined otherwise. */
export async function readSession(
  deps: SessionDeps,
  request: FastifyRequest,
  stage: SessionStage,
): Promise<SignedIn | undefined> {
  const token = request.cookies[SESSION_COOKIE];
  if (!isToken(token)) return undefined;
  const hash = tokenHash(token);
  const session = await deps.sessions.touch(hash);
  if (!session || session.stage !== stage) return undefined;
  const member = await deps.members.byId(session.memberId);
  // A removed member's sessions are gone with them (ON DELETE CASCADE); the org is checked anyway.
  if (!member || member.orgId !== session.orgId) return undefined;
  return { member, session, tokenHash: hash };
}

/**
 * A state change must come from the dashboard's own pages: the Origin (sent by browsers on every POST)
 * names the dashboard, and the request carries the session's CSRF token in a header, which another site
 * can neither read nor set (synchronizer token; SameSite=Strict cookies on top).
 */
export function sameOrigin(deps: SessionDeps, request: FastifyRequest): void {
  const origin = request.headers.origin;
  const site = request.headers['sec-fetch-site'];
  if ((origin !== undefined && origin !== deps.origin) || (site !== undefined && site !== 'same-origin'))
    throw new HttpError(403, 'csrf_failed', 'The request did not come from the dashboard.');
}

export function checkCsrf(deps: SessionDeps, request: FastifyRequest, session: Session): void {
  sameOrigin(deps, request);
  const presented = request.headers[CSRF_HEADER];
  if (typeof presented !== 'string' || !sameSecret(presented, session.csrfToken))
    throw new HttpError(403, 'csrf_failed', 'The request lacks a valid CSRF token; reload the page.');
}

/** preHandlers of the routes of a signed-in person. */
export function guards(deps: SessionDeps) {
  const signedIn: preHandlerAsyncHookHandler = async (request) => {
    const s = await readSession(deps, request, 'full');
    if (!s) throw new HttpError(401, 'unauthenticated', 'Sign in first.');
    request.signedIn = s;
  };
  /** Signed in, and the request is a state change of this session (CSRF). */
  const change: preHandlerAsyncHookHandler = async (request, reply) => {
    await signedIn.call(request.server, request, reply);
    checkCsrf(deps, request, request.signedIn!.session);
  };
  /** A change of the organization: owners only. */
  const owner =
    (what: OrganizationChange): preHandlerAsyncHookHandler =>
    async (request, reply) => {
      await change.call(request.server, request, reply);
      if (!mayChange(request.signedIn!.member.role, what))
        throw new HttpError(403, 'forbidden', 'Only an owner of the organization can do this.');
    };
  /**
   * An owner's change that could hand the organization to someone else (an invitation, removing a member,
   * a new API key, which reads every job result): the owner proved who they are within the last
   * CONFIRMATION_MINUTES. Found by a review (2026-12-05): a session alone, taken from an unlocked computer,
   * could invite an address of the taker's as owner, remove the real owners, or mint a key.
   */
  const confirmedOwner =
    (what: OrganizationChange): preHandlerAsyncHookHandler =>
    async (request, reply) => {
      await owner(what).call(request.server, request, reply);
      if (!request.signedIn!.session.confirmedRecently)
        throw new HttpError(
          403,
          'confirmation_required',
          `Confirm your password to do this (asked again ${CONFIRMATION_MINUTES} minutes after you last gave it).`,
        );
    };
  return { signedIn, change, owner, confirmedOwner };
}

/** The signed-in person of a guarded route. */
export function who(request: FastifyRequest): SignedIn {
  if (!request.signedIn) throw new HttpError(401, 'unauthenticated', 'Sign in first.');
  return request.signedIn;
}
