import { createClient } from '@connectrpc/connect';
import { LIMITS } from '@dnc/api-contract/limits';
import { admissionv1 } from '@dnc/proto';
import { type AdminEnv, type Command, intFlag, operatorTransport, requireFlag, UsageError } from '../cli.js';

export function admissionAdmin(env: AdminEnv) {
  return createClient(admissionv1.AdmissionAdminService, operatorTransport(env, env.admission, 'admission'));
}

const CALL = { timeoutMs: 10_000 };

function organization(o: admissionv1.Organization | undefined) {
  if (!o) return null;
  return {
    org_id: o.orgId,
    name: o.name,
    status: o.suspended ? 'suspended' : 'active',
    activation_complete: o.activationComplete,
    rate_limit: o.rateLimit === 0 ? null : o.rateLimit,
  };
}

export const orgCommands: Command[] = [
  {
    name: 'org create',
    usage: 'org create --name NAME [--activation-incomplete]',
    options: { name: { type: 'string' }, 'activation-incomplete': { type: 'boolean' } },
    async run(flags, env) {
      const r = await admissionAdmin(env).createOrganization(
        { name: requireFlag(flags, 'name'), activationComplete: flags['activation-incomplete'] !== true },
        CALL,
      );
      return { org_id: r.orgId };
    },
  },
  {
    name: 'org suspend',
    usage: 'org suspend --org ID',
    options: { org: { type: 'string' } },
    async run(flags, env) {
      const r = await admissionAdmin(env).suspendOrganization({ orgId: requireFlag(flags, 'org') }, CALL);
      return organization(r.organization);
    },
  },
  {
    name: 'org reinstate',
    usage: 'org reinstate --org ID',
    options: { org: { type: 'string' } },
    async run(flags, env) {
      const r = await admissionAdmin(env).reinstateOrganization({ orgId: requireFlag(flags, 'org') }, CALL);
      return organization(r.organization);
    },
  },
  {
    name: 'org set-rate-limit',
    usage: `org set-rate-limit --org ID --limit N   (requests per 60 s, ${LIMITS.minRateLimit}..${LIMITS.maxRateLimit})`,
    options: { org: { type: 'string' }, limit: { type: 'string' } },
    async run(flags, env) {
      const orgId = requireFlag(flags, 'org');
      requireFlag(flags, 'limit');
      const limit = intFlag(flags, 'limit', LIMITS.minRateLimit, LIMITS.maxRateLimit)!;
      const r = await admissionAdmin(env).setRateLimit({ orgId, limit }, CALL);
      return organization(r.organization);
    },
  },
  {
    name: 'org activation',
    usage: 'org activation --org ID --complete|--incomplete',
    options: { org: { type: 'string' }, complete: { type: 'boolean' }, incomplete: { type: 'boolean' } },
    async run(flags, env) {
      const orgId = requireFlag(flags, 'org');
      if ((flags['complete'] === true) === (flags['incomplete'] === true))
        throw new UsageError('give exactly one of --complete or --incomplete');
      const r = await admissionAdmin(env).setActivation(
        { orgId, complete: flags['complete'] === true },
        CALL,
      );
      return organization(r.organization);
    },
  },
];
