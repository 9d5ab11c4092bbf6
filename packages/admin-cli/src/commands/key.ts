import { randomUUID } from 'node:crypto';
import { timestampDate } from '@bufbuild/protobuf/wkt';
import { Code, ConnectError, readPublicReason } from '@dnc/kit';
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

/** Refusals of CreateApiKey: nothing was made. Any other failure leaves the outcome unknown. */
const REFUSED = new Set(['not_found', 'conflict', 'validation_error']);

/**
 * A key creation whose answer did not arrive (deadline, connection lost, admission stopping): the key may
 * have been made, and its secret is shown once, so it is revoked by the id chosen for it. The revocation
 * waits for a creation still in flight (RevokeApiKeyRequest.org_id): the key is revoked, or found never
 * made. What the operator is told says which, and what to do when even that is unknown.
 */
async function notHandedOver(
  admin: ReturnType<typeof admissionAdmin>,
  orgId: string,
  keyId: string,
  cause: unknown,
): Promise<Error> {
  const why = ConnectError.from(cause).rawMessage.split('\n')[0];
  try {
    await admin.revokeApiKey({ keyId, orgId }, CALL);
    return new Error(
      `key create did not complete (${why}); key ${keyId} was made and is revoked: create another`,
    );
  } catch (error) {
    if (ConnectError.from(error).code === Code.NotFound)
      return new Error(`key create did not complete (${why}); no key was made: create another`);
    return new Error(
      `key create's outcome is unknown (${why}): revoke key ${keyId} (key revoke --key-id ${keyId}), then create another`,
    );
  }
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
      const keyId = randomUUID();
      try {
        const r = await admin.createApiKey({ orgId, keyId }, CALL);
        return { key_id: r.keyId, api_key: r.apiKey };
      } catch (error) {
        if (REFUSED.has(readPublicReason(error)?.reason ?? '')) throw error;
        throw await notHandedOver(admin, orgId, keyId, error);
      }
    },
  },
  {
    name: 'key revoke',
    usage: 'key revoke --key-id ID',
    options: { 'key-id': { type: 'string' } },
    async run(flags, env) {
      const r = await admissionAdmin(env).revokeApiKey({ keyId: requireFlag(flags, 'key-id') }, CALL);
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
