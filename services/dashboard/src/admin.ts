import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import type { ServiceImpl } from '@connectrpc/connect';
import { UUID_REGEXP as UUID } from '@dnc/api-contract/limits';
import { Code, ConnectError, type Logger, publicError, validationError } from '@dnc/kit';
import { dashboardv1 } from '@dnc/proto';
import type { Role } from './domain/roles.js';
import { type InvitationDeps, invite } from './invitations.js';
import { HttpError, type Upstreams } from './upstream.js';

const ROLE: Partial<Record<dashboardv1.Role, Role>> = {
  [dashboardv1.Role.OWNER]: 'owner',
  [dashboardv1.Role.MEMBER]: 'member',
};

/** DashboardAdminService: what an operator does to the dashboard (`dnc-admin user invite`). */
export function dashboardAdminService(
  deps: InvitationDeps & { upstreams: Upstreams; logger: Logger },
): ServiceImpl<typeof dashboardv1.DashboardAdminService> {
  return {
    async inviteUser(req) {
      if (!UUID.test(req.orgId)) throw validationError('org_id must be a lowercase UUID');
      const role = ROLE[req.role];
      if (!role) throw validationError('role must be owner or member');
      // The organization must exist (admission owns organizations).
      try {
        await deps.upstreams.organization.getOrganization({ orgId: req.orgId });
      } catch (error) {
        if (ConnectError.from(error).code === Code.NotFound)
          throw publicError(Code.NotFound, 'not_found', { message: 'organization not found' });
        throw error;
      }
      try {
        const { invitation, link } = await invite(deps, {
          orgId: req.orgId,
          email: req.email,
          role,
          invitedBy: null,
        });
        deps.logger.info(
          { orgId: req.orgId, invitationId: invitation.invitationId, role },
          'invitation created',
        );
        return {
          invitationId: invitation.invitationId,
          link,
          expiresAt: timestampFromDate(invitation.expiresAt),
        };
      } catch (error) {
        // Operator-facing: a taken email is a conflict, anything else the operator typed is invalid.
        if (error instanceof HttpError && error.status === 409)
          throw publicError(Code.AlreadyExists, 'conflict', { message: error.message });
        if (error instanceof HttpError) throw validationError(error.message);
        throw error;
      }
    },
  };
}
