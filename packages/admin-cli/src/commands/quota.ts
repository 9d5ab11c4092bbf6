import { createClient } from '@connectrpc/connect';
import { quotav1 } from '@dnc/proto';
import { type AdminEnv, type Command, intFlag, operatorTransport, requireFlag } from '../cli.js';

const CALL = { timeoutMs: 10_000 };

export function quotaAdmin(env: AdminEnv) {
  return createClient(quotav1.QuotaAdminService, operatorTransport(env, env.quota, 'quota'));
}

function account(a: quotav1.QuotaAccount | undefined) {
  if (!a) return null;
  return {
    country: a.country,
    period: a.period,
    limit: Number(a.limit),
    used: Number(a.used),
    reserved: Number(a.reserved),
  };
}

export const quotaCommands: Command[] = [
  {
    name: 'quota set',
    usage: 'quota set --org ID --country CC --limit N   (checked inputs per calendar month, UTC)',
    options: { org: { type: 'string' }, country: { type: 'string' }, limit: { type: 'string' } },
    async run(flags, env) {
      const orgId = requireFlag(flags, 'org');
      const country = requireFlag(flags, 'country');
      requireFlag(flags, 'limit');
      const limit = intFlag(flags, 'limit', 0, Number.MAX_SAFE_INTEGER)!;
      const r = await quotaAdmin(env).setLimit({ orgId, country, limit: BigInt(limit) }, CALL);
      return { org_id: orgId, ...account(r.quotaAccount) };
    },
  },
  {
    name: 'quota show',
    usage: 'quota show --org ID',
    options: { org: { type: 'string' } },
    async run(flags, env) {
      const orgId = requireFlag(flags, 'org');
      const r = await quotaAdmin(env).getQuota({ orgId }, CALL);
      return { org_id: orgId, accounts: r.accounts.map(account) };
    },
  },
];
