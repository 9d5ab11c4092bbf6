import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import type { ServiceImpl } from '@connectrpc/connect';
import { Code, ConnectError, type Logger, publicError } from '@dnc/kit';
import { dashboardv1 } from '@dnc/proto';
import type { Role } from './domain/roles.js';
import { type InvitationDeps, invite } from './invitations.js';
import { HttpError, type Upstreams } from './upstream.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
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
      const invalid = (message: string) => publicError(Code.InvalidArgument, 'validation_error', { message });
      if (!UUID.test(req.orgId)) throw invalid('org_id must be a lowercase UUID');
      const role = ROLE[req.role];
      if (!role) throw invalid('role must be owner or member');
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
        if (error instanceof HttpError)
          throw publicError(error.status === 409 ? Code.AlreadyExists : Code.InvalidArgument, error.code, {
            message: error.message,
          });
        throw error;
      }
    },
  };
}
