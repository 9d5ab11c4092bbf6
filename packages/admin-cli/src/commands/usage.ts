import { timestampDate } from '@bufbuild/protobuf/wkt';
import { quotav1 } from '@dnc/proto';
import { type Command, requireFlag } from '../cli.js';
import { quotaAdmin } from './quota.js';

const KIND: Record<number, string> = {
  [quotav1.UsageKind.SYNC]: 'v1_sync',
  [quotav1.UsageKind.JOB]: 'v2_job',
};

export const usageCommand: Command = {
  name: 'usage',
  usage: 'usage --org ID [--country CC]',
  options: { org: { type: 'string' }, country: { type: 'string' } },
  async run(flags, env) {
    const orgId = requireFlag(flags, 'org');
    const country = typeof flags['country'] === 'string' ? flags['country'] : '';
    const r = await quotaAdmin(env).listUsage({ orgId, country }, { timeoutMs: 10_000 });
    return {
      org_id: orgId,
      records: r.records.map((u) => ({
        time: u.time ? timestampDate(u.time).toISOString() : null,
        // The month it counts against (its reservation's): bill by it, not by `time`.
        period: u.period,
        country: u.country,
        count: Number(u.count),
        kind: KIND[u.kind] ?? 'unknown',
      })),
    };
  },
};
