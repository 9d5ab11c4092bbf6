import { timestampDate } from '@bufbuild/protobuf/wkt';
import { createClient } from '@connectrpc/connect';
import { dashboardv1 } from '@dnc/proto';
import { type Command, operatorTransport, requireFlag, UsageError } from '../cli.js';

const ROLES: Record<string, dashboardv1.Role> = {
  owner: dashboardv1.Role.OWNER,
  member: dashboardv1.Role.MEMBER,
};

/** Invite a person to an organization's dashboard; the one-time link is printed once. */
export const userInviteCommand: Command = {
  name: 'user invite',
  usage: 'user invite --org ID --email EMAIL --role owner|member   (prints a one-time link that expires)',
  options: { org: { type: 'string' }, email: { type: 'string' }, role: { type: 'string' } },
  async run(flags, env) {
    const role = ROLES[requireFlag(flags, 'role')];
    if (role === undefined) throw new UsageError('--role must be owner or member');
    const client = createClient(
      dashboardv1.DashboardAdminService,
      operatorTransport(env, env.dashboard, 'dashboard'),
    );
    const r = await client.inviteUser(
      { orgId: requireFlag(flags, 'org'), email: requireFlag(flags, 'email'), role },
      { timeoutMs: 10_000 },
    );
    return {
      invitation_id: r.invitationId,
      link: r.link,
      expires_at: r.expiresAt ? timestampDate(r.expiresAt).toISOString() : null,
    };
  },
};
