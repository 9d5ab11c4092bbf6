import type { FastifyInstance } from 'fastify';
import { isRole } from '../domain/roles.js';
import { invite } from '../invitations.js';
import { guards, who } from '../session.js';
import { AUDIT_PAGE } from '../store/audit.js';
import { HttpError, notFound } from '../upstream.js';
import { body, iso, type RouteDeps, UUID } from './deps.js';

/** The organization's members and invitations, and its audit log. */
export function peopleRoutes(app: FastifyInstance, deps: RouteDeps): void {
  memberRoutes(app, deps);
  invitationRoutes(app, deps);
  auditRoutes(app, deps);
}

/** Members: the list (with pending invitations) and removal. */
function memberRoutes(app: FastifyInstance, deps: RouteDeps): void {
  const { signedIn, confirmedOwner } = guards(deps);

  app.get('/api/members', { preHandler: signedIn }, async (request) => {
    const { member } = who(request);
    const [members, invitations] = await Promise.all([
      deps.members.ofOrganization(member.orgId),
      deps.invitations.pending(member.orgId),
    ]);
    return {
      members: members.map((m) => ({
        id: m.memberId,
        email: m.email,
        role: m.role,
        totp_enabled: !!m.totp,
        created_at: iso(m.createdAt),
        last_sign_in_at: iso(m.lastSignInAt),
      })),
      invitations: invitations.map((i) => ({
        id: i.invitationId,
        email: i.email,
        role: i.role,
        // Who sent it: a member's email, or null when the operator did.
        invited_by: i.invitedByEmail,
        created_at: iso(i.createdAt),
        expires_at: iso(i.expiresAt),
      })),
    };
  });

  app.post(
    '/api/members/:memberId/remove',
    { preHandler: confirmedOwner('member.remove') },
    async (request, reply) => {
      const { member } = who(request);
      const { memberId } = request.params as { memberId: string };
      if (!UUID.test(memberId)) throw notFound();
      // The removal and its audit row are committed together or not at all.
      await deps.transaction(async (tx) => {
        const removed = await deps.members.remove(member.orgId, memberId, tx);
        if (removed === 'absent') throw notFound();
        if (removed === 'last_owner')
          throw new HttpError(
            409,
            'last_owner',
            'The organization keeps at least one owner: make another owner first.',
          );
        await deps.audit.record(member.orgId, member.email, 'member_removed', removed.email, tx);
      });
      return reply.code(204).send();
    },
  );
}

/** Audit log of the organization, newest first. */
function auditRoutes(app: FastifyInstance, deps: RouteDeps): void {
  const { signedIn } = guards(deps);

  app.get('/api/audit', { preHandler: signedIn }, async (request) => {
    const { before } = request.query as { before?: string };
    if (before !== undefined && !UUID.test(before))
      throw new HttpError(400, 'validation_error', 'before must be the id of an audit event');
    const events = await deps.audit.list(who(request).member.orgId, before);
    return {
      events: events.map((e) => ({
        id: e.id,
        at: iso(e.at),
        actor: e.actor,
        action: e.action,
        target: e.target,
      })),
      next_before: events.length === AUDIT_PAGE ? events.at(-1)!.id : null,
    };
  });
}

/** Invitations an owner makes (the one-time link is in this response only) and revokes. */
function invitationRoutes(app: FastifyInstance, deps: RouteDeps): void {
  const { owner, confirmedOwner } = guards(deps);

  app.post(
    '/api/members/invitations',
    { preHandler: confirmedOwner('member.invite'), schema: { body: body({ email: 300, role: 10 }) } },
    async (request, reply) => {
      const { member } = who(request);
      const { email, role } = request.body as { email: string; role: string };
      if (!isRole(role)) throw new HttpError(400, 'validation_error', 'role must be owner or member');
      const { invitation, link } = await invite(deps, {
        orgId: member.orgId,
        email,
        role,
        invitedBy: { memberId: member.memberId, email: member.email },
      });
      return reply.code(201).send({
        invitation: {
          id: invitation.invitationId,
          email: invitation.email,
          role,
          expires_at: iso(invitation.expiresAt),
        },
        link,
      });
    },
  );

  app.post(
    '/api/members/invitations/:invitationId/revoke',
    { preHandler: owner('invitation.revoke') },
    async (request, reply) => {
      const { member } = who(request);
      const { invitationId } = request.params as { invitationId: string };
      if (!UUID.test(invitationId)) throw notFound();
      // The revocation and its audit row are committed together or not at all.
      await deps.transaction(async (tx) => {
        const revoked = await deps.invitations.revoke(member.orgId, invitationId, tx);
        if (!revoked) throw notFound();
        await deps.audit.record(member.orgId, member.email, 'invitation_revoked', revoked.email, tx);
      });
      return reply.code(204).send();
    },
  );
}
