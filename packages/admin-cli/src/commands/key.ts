import { randomUUID } from 'node:crypto';
import { timestampDate } from '@bufbuild/protobuf/wkt';
import { Code, ConnectError } from '@dnc/kit';
import type { admissionv1 } from '@dnc/proto';
import { type Command, requireFlag } from '../cli.js';
import { admissionAdmin } from './org.js';

const CALL = { timeoutMs: 10_000 };

/** A key as listed: never the secret, only the short public prefix. */
function listed(k: admissionv1.ApiKey | undefined) {
  if (!k) return null;
  return {
    key_id: k.keyId,
    org_id: k.orgId,
    prefix: k.prefix,
    status: k.revokedAt ? 'revoked' : 'active',
    created_at: k.createdAt ? timestampDate(k.createdAt).toISOString() : null,
    revoked_at: k.revokedAt ? timestampDate(k.revokedAt).toISOString() : null,
  };
}

/** Failures that leave a creation's outcome unknown (any other is a refusal: nothing was made). */
const OUTCOME_UNKNOWN = new Set([
  Code.Unavailable,
  Code.DeadlineExceeded,
  Code.Canceled,
  Code.Aborted,
  Code.Unknown,
  Code.Internal,
  Code.DataLoss,
]);

/**
 * A key creation whose answer did not arrive (deadline, connection lost, admission stopping): the key may
 * have been made, and its secret is shown once, so it is revoked by the id chosen for it. The revocation
 * waits for a creation still in flight (RevokeApiKeyRequest.org_id): the key is revoked, or found never
 * made. "Never made" is said only when no active key of the organization is newer than the attempt (an
 * admission older than the key_id field would have made it under an id of its own). What the operator
 * is told says which, and what to do when even that is unknown.
 */
async function notHandedOver(
  admin: ReturnType<typeof admissionAdmin>,
  attempt: { orgId: string; keyId: string; startedMs: number },
  cause: unknown,
): Promise<Error> {
  const { orgId, keyId } = attempt;
  const why = ConnectError.from(cause).rawMessage.split('\n')[0];
  const unknown = `key create's outcome is unknown (${why}): revoke`;
  try {
    await admin.revokeApiKey({ keyId, orgId }, CALL);
    return new Error(
      `key create did not complete (${why}); key ${keyId} was made and is revoked: create another`,
    );
  } catch (error) {
    if (ConnectError.from(error).code !== Code.NotFound)
      return new Error(
        `${unknown} key ${keyId} (key revoke --key-id ${keyId} --org ${orgId}), then create another`,
      );
  }
  const { keys } = await admin.listApiKeys({ orgId }, CALL).catch(() => ({ keys: undefined }));
  const newer = keys?.filter(
    (k) => !k.revokedAt && k.createdAt && timestampDate(k.createdAt).getTime() >= attempt.startedMs - 60_000,
  );
  if (newer?.length === 0)
    return new Error(`key create did not complete (${why}); no key was made: create another`);
  return new Error(
    `${unknown} the active keys of the organization you did not see (key list --org ${orgId})`,
  );
}

export const keyCommands: Command[] = [
  {
    name: 'key create',
    usage: 'key create --org ID   (the key is shown once)',
    options: { org: { type: 'string' } },
    async run(flags, env) {
      const orgId = requireFlag(flags, 'org');
      const admin = admissionAdmin(env);
      // Chosen here, so that a key whose answer is lost is revoked by its id: never left active unseen.
      const attempt = { orgId, keyId: randomUUID(), startedMs: Date.now() };
      try {
        const r = await admin.createApiKey({ orgId, keyId: attempt.keyId }, CALL);
        return { key_id: r.keyId, api_key: r.apiKey };
      } catch (error) {
        if (!OUTCOME_UNKNOWN.has(ConnectError.from(error).code)) throw error;
        throw await notHandedOver(admin, attempt, error);
      }
    },
  },
  {
    name: 'key revoke',
    usage: 'key revoke --key-id ID [--org ID]   (with --org: after a creation of that key still in flight)',
    options: { 'key-id': { type: 'string' }, org: { type: 'string' } },
    async run(flags, env) {
      const orgId = typeof flags['org'] === 'string' ? flags['org'] : '';
      const r = await admissionAdmin(env).revokeApiKey({ keyId: requireFlag(flags, 'key-id'), orgId }, CALL);
      return listed(r.apiKey);
    },
  },
  {
    name: 'key list',
    usage: 'key list --org ID',
    options: { org: { type: 'string' } },
    async run(flags, env) {
      const r = await admissionAdmin(env).listApiKeys({ orgId: requireFlag(flags, 'org') }, CALL);
      return { keys: r.keys.map(listed) };
    },
  },
];
