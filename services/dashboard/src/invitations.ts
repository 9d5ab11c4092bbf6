import { normalEmail } from './domain/email.js';
import { passwordProblem } from './domain/password.js';
import type { Role } from './domain/roles.js';
import { isToken, newToken, tokenHash } from './domain/tokens.js';
import type { AuditLog } from './store/audit.js';
import type { InvitationStore } from './store/invitations.js';
import { EmailTaken, type MemberStore } from './store/members.js';
import type { Transaction } from './store/transaction.js';
import { HttpError } from './upstream.js';

export interface InvitationDeps {
  invitations: InvitationStore;
  members: MemberStore;
  audit: AuditLog;
  /** A change of the dashboard's data and its audit row, in one transaction. */
  transaction: Transaction;
  publicUrl: string;
  ttlHours: number;
  hash: (password: string) => Promise<string>;
}

/**
 * The invitation link carries its token in the URL fragment: a fragment is never sent to a server, so
 * it appears in no access log and no Referer; the page reads it, sends it in a POST body and removes it
 * from the address bar and the history.
 */
export function invitationLink(publicUrl: string, token: string): string {
  return `${publicUrl}/invitation#token=${token}`;
}

/** Invite a person to an organization: by the operator (`invitedBy` null) or by an owner. */
export async function invite(
  deps: InvitationDeps,
  i: { orgId: string; email: unknown; role: Role; invitedBy: { memberId: string; email: string } | null },
) {
  const email = normalEmail(i.email);
  if (!email) throw new HttpError(400, 'validation_error', 'Give a valid email address.');
  // An owner learns only of their own organization's members: an email of another organization is
  // invited as any other (its acceptance is refused, to the person who holds the email alone). The
  // operator is told either way.
  const existing = await deps.members.byEmail(email);
  if (existing && (i.invitedBy === null || existing.orgId === i.orgId))
    throw new HttpError(409, 'email_taken', 'This email already belongs to a member of an organization.');
  const token = newToken();
  // The invitation and its audit row are committed together or not at all.
  const invitation = await deps.transaction(async (tx) => {
    const invitation = await deps.invitations.create(
      {
        orgId: i.orgId,
        email,
        role: i.role,
        tokenHash: tokenHash(token),
        invitedBy: i.invitedBy?.memberId ?? null,
        ttlHours: deps.ttlHours,
      },
      tx,
    );
    if (!invitation) throw new HttpError(401, 'unauthenticated', 'Sign in again.');
    await deps.audit.record(
      i.orgId,
      i.invitedBy?.email ?? 'operator',
      'invitation_created',
      `${email} (${i.role})`,
      tx,
    );
    return invitation;
  });
  return { invitation, link: invitationLink(deps.publicUrl, token) };
}

/** What the invitation page shows before the person chooses a password. */
export async function inspect(deps: InvitationDeps, token: unknown) {
  const invitation = isToken(token) ? await deps.invitations.open(tokenHash(token)) : undefined;
  if (!invitation) throw expired();
  return invitation;
}

const expired = () =>
  new HttpError(404, 'invitation_invalid', 'This invitation link is not valid any more: ask for a new one.');

/** Accept an invitation with a password: the member is created, the link is spent. */
export async function accept(deps: InvitationDeps, token: unknown, password: unknown) {
  if (!isToken(token)) throw expired();
  const invitation = await deps.invitations.open(tokenHash(token));
  if (!invitation) throw expired();
  if (typeof password !== 'string') throw new HttpError(400, 'validation_error', 'Choose a password.');
  const problem = passwordProblem(password, invitation.email);
  if (problem) throw new HttpError(400, 'weak_password', problem);
  const passwordHash = await deps.hash(password);
  try {
    // The new member, the spent link and the audit row are committed together or not at all.
    const done = await deps.invitations.accept(tokenHash(token), async (tx, inv) => {
      const member = await deps.members.create(tx, {
        orgId: inv.orgId,
        email: inv.email,
        role: inv.role,
        passwordHash,
      });
      await deps.audit.record(inv.orgId, member.email, 'invitation_accepted', member.role, tx);
      return member;
    });
    if (!done) throw expired();
    return done.result;
  } catch (error) {
    if (error instanceof EmailTaken)
      throw new HttpError(409, 'email_taken', 'This email already belongs to a member of an organization.');
    throw error;
  }
}
