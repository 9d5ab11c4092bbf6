import { timestampDate, timestampFromDate } from '@bufbuild/protobuf/wkt';
import { createClient } from '@connectrpc/connect';
import { adapterIdentity, type Identity } from '@dnc/kit';
import { admissionv1, platformv1 } from '@dnc/proto';
import { type AdminEnv, type Command, intFlag, operatorTransport, UsageError } from '../cli.js';

const PAGE = 1000;

interface Source {
  identity: Identity;
  address: string;
}

/** Every admin listener: admission, quota, the job scheduler, the dashboard, each announced adapter. */
async function sources(env: AdminEnv): Promise<Source[]> {
  const list: Source[] = [
    { identity: 'admission', address: env.admission },
    { identity: 'quota', address: env.quota },
    { identity: 'job-scheduler', address: env.jobs },
    { identity: 'dashboard', address: env.dashboard },
  ];
  const admin = createClient(
    admissionv1.AdmissionAdminService,
    operatorTransport(env, env.admission, 'admission'),
  );
  const { countries } = await admin.listCountries({}, { timeoutMs: 5_000 });
  for (const c of countries)
    if (c.adapterAdminAddress)
      list.push({ identity: adapterIdentity(c.country), address: c.adapterAdminAddress });
  return list;
}

/** One service's events since `since`, every page of them up to `limit`. */
async function eventsOf(env: AdminEnv, source: Source, since: Date | undefined, limit: number) {
  const client = createClient(
    platformv1.AuditService,
    operatorTransport(env, source.address, source.identity),
  );
  const out: platformv1.AuditEvent[] = [];
  let afterId = 0n;
  while (out.length < limit) {
    const { events } = await client.listAuditEvents(
      {
        afterId,
        limit: Math.min(PAGE, limit - out.length),
        ...(since ? { since: timestampFromDate(since) } : {}),
      },
      { timeoutMs: 10_000 },
    );
    out.push(...events);
    if (events.length < PAGE) break;
    afterId = events.at(-1)!.id;
  }
  return out;
}

/**
 * `dnc-admin audit`: the administrative calls every service wrote in its append-only audit log (who,
 * when, which method, the target ids, the outcome), merged in time order. A service that cannot be
 * read is listed under `unreadable`, never silently left out.
 */
export const auditCommand: Command = {
  name: 'audit',
  usage: 'audit [--since ISO-TIME] [--service NAME] [--limit N]',
  options: { since: { type: 'string' }, service: { type: 'string' }, limit: { type: 'string' } },
  async run(flags, env) {
    let since: Date | undefined;
    if (typeof flags['since'] === 'string') {
      since = new Date(flags['since']);
      if (Number.isNaN(since.getTime())) throw new UsageError('--since must be an ISO time');
    }
    const limit = intFlag(flags, 'limit', 1, 100_000) ?? 1000;
    const wanted = typeof flags['service'] === 'string' ? flags['service'] : undefined;
    const all = (await sources(env)).filter((s) => !wanted || s.identity === wanted);
    const unreadable: string[] = [];
    const lists = await Promise.all(
      all.map((s) =>
        eventsOf(env, s, since, limit).catch(() => {
          unreadable.push(s.identity);
          return [];
        }),
      ),
    );
    const events = lists
      .flat()
      .map((e) => ({
        at: e.at ? timestampDate(e.at).toISOString() : '',
        service: e.service,
        caller: e.caller,
        method: e.method,
        targets: e.targets,
        outcome: e.outcome,
        call_id: e.callId,
      }))
      .sort((a, b) => a.at.localeCompare(b.at))
      .slice(-limit);
    return { events, ...(unreadable.length ? { unreadable: unreadable.sort() } : {}) };
  },
};
