import { randomUUID } from 'node:crypto';
import { createClient } from '@connectrpc/connect';
import { LIMITS } from '@dnc/api-contract/limits';
import { Code, ConnectError } from '@dnc/kit';
import { admissionv1 } from '@dnc/proto';
import { type AdminEnv, type Command, intFlag, operatorTransport, requireFlag, UsageError } from '../cli.js';

export function admissionAdmin(env: AdminEnv) {
  return createClient(admissionv1.AdmissionAdminService, operatorTransport(env, env.admission, 'admission'));
}

const CALL = { timeoutMs: 10_000 };
const OUTCOME_UNKNOWN = new Set([Code.Unavailable, Code.DeadlineExceeded]);

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
      const admin = admissionAdmin(env);
      // The id chosen here makes sending it again safe: the same id and name answer the same organization.
      const request = {
        orgId: randomUUID(),
        name: requireFlag(flags, 'name'),
        activationComplete: flags['activation-incomplete'] !== true,
      };
      for (let attempt = 1; ; attempt++) {
        try {
          return { org_id: (await admin.createOrganization(request, CALL)).orgId };
        } catch (error) {
          // Its outcome unknown (admission unreachable or too slow): sent again, at most three times in all.
          if (attempt === 3 || !OUTCOME_UNKNOWN.has(ConnectError.from(error).code)) throw error;
          await new Promise((r) => setTimeout(r, 500 * attempt));
        }
      }
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
