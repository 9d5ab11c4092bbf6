import { timestampDate } from '@bufbuild/protobuf/wkt';
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

export const keyCommands: Command[] = [
  {
    name: 'key create',
    usage: 'key create --org ID   (the key is shown once)',
    options: { org: { type: 'string' } },
    async run(flags, env) {
      const r = await admissionAdmin(env).createApiKey({ orgId: requireFlag(flags, 'org') }, CALL);
      return { key_id: r.keyId, api_key: r.apiKey };
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
