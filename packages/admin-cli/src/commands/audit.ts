import { timestampDate, timestampFromDate } from '@bufbuild/protobuf/wkt';
import { createClient } from '@connectrpc/connect';
import { adapterIdentity, type Identity } from '@dnc/kit';
import { admissionv1, platformv1 } from '@dnc/proto';
import { type AdminEnv, type Command, intFlag, operatorTransport, timeFlag, UsageError } from '../cli.js';

const PAGE = 1000;

interface Source {
  identity: Identity;
  address: string;
}

/**
 * Every admin listener: admission, quota, the job scheduler, the dashboard, each announced adapter.
 * Admission down: the others are still read, the adapters (admission announces them) listed unreadable.
 */
async function sources(env: AdminEnv): Promise<{ list: Source[]; unreadable: string[] }> {
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
  try {
    const { countries } = await admin.listCountries({}, { timeoutMs: 5_000 });
    for (const c of countries)
      if (c.adapterAdminAddress)
        list.push({ identity: adapterIdentity(c.country), address: c.adapterAdminAddress });
    return { list, unreadable: [] };
  } catch {
    return { list, unreadable: ['registry adapters (their addresses come from admission)'] };
  }
}

/**
 * The newest `limit` rows of a log read in pages of ascending ids (`page(afterId, n)`), and how many
 * older ones were left out. Every page is read: a log longer than `limit` shows its latest rows, not
 * its first (a review, 2026-12-05: yesterday's RevokeApiKey was absent past 1,000 older rows).
 */
export async function newestEvents<E extends { id: bigint }>(
  page: (afterId: bigint, limit: number) => Promise<E[]>,
  limit: number,
  pageSize = PAGE,
): Promise<{ events: E[]; omitted: number }> {
  let kept: E[] = [];
  let omitted = 0;
  let afterId = 0n;
  for (;;) {
    const events = await page(afterId, pageSize);
    kept.push(...events);
    if (kept.length > limit) {
      omitted += kept.length - limit;
      kept = kept.slice(-limit);
    }
    if (events.length < pageSize) return { events: kept, omitted };
    afterId = events.at(-1)!.id;
  }
}

/** One service's newest events since `since`, at most `limit`. */
function eventsOf(env: AdminEnv, source: Source, since: Date | undefined, limit: number) {
  const client = createClient(
    platformv1.AuditService,
    operatorTransport(env, source.address, source.identity),
  );
  const page = async (afterId: bigint, n: number) =>
    (
      await client.listAuditEvents(
        { afterId, limit: n, ...(since ? { since: timestampFromDate(since) } : {}) },
        { timeoutMs: 10_000 },
      )
    ).events;
  return newestEvents(page, limit);
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
    const since = timeFlag(flags, 'since');
    const limit = intFlag(flags, 'limit', 1, 100_000) ?? 1000;
    const wanted = typeof flags['service'] === 'string' ? flags['service'] : undefined;
    const { list, unreadable } = await sources(env);
    if (wanted && !list.some((s) => s.identity === wanted) && !/^registry-adapter-[a-z]{2}$/.test(wanted))
      throw new UsageError(`--service must be one of ${list.map((s) => s.identity).join(', ')}`);
    const all = list.filter((s) => !wanted || s.identity === wanted);
    if (wanted && all.length === 0) unreadable.push(wanted);
    let omitted = 0;
    const lists = await Promise.all(
      all.map((s) =>
        eventsOf(env, s, since, limit).then(
          (r) => {
            omitted += r.omitted;
            return r.events;
          },
          () => {
            unreadable.push(s.identity);
            return [];
          },
        ),
      ),
    );
    const merged = lists
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
      .sort((a, b) => a.at.localeCompare(b.at));
    omitted += Math.max(0, merged.length - limit);
    return {
      events: merged.slice(-limit),
      // Older events left out for --limit: say so, never a silent cut (narrow with --since or --service).
      ...(omitted ? { older_events_omitted: omitted } : {}),
      ...(unreadable.length ? { unreadable: unreadable.sort() } : {}),
    };
  },
};
