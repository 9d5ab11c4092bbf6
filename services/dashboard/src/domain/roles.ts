/**
 * Roles of a member of an organization. An owner does everything the dashboard offers; a member reads
 * everything and changes nothing of the organization (a member still manages their own password,
 * second factor and sessions).
 */
export const ROLES = ['owner', 'member'] as const;
export type Role = (typeof ROLES)[number];

export function isRole(value: unknown): value is Role {
  return typeof value === 'string' && (ROLES as readonly string[]).includes(value);
}

/** Changes of the organization, each allowed to owners only. */
export type OrganizationChange =
  | 'key.create'
  | 'key.revoke'
  | 'job.cancel'
  | 'member.invite'
  | 'member.remove'
  | 'invitation.revoke';

export function mayChange(role: Role, _change: OrganizationChange): boolean {
  return role === 'owner';
}
