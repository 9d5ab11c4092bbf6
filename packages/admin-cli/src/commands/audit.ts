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

/** One page of a service's log: the newest first below `beforeId` (0: the newest), or ascending after `afterId`. */
export type AuditPage<E> = (
  query: { newestFirst: boolean; beforeId: bigint; afterId: bigint },
  limit: number,
) => Promise<E[]>;

/**
 * The newest `limit` events of a log, in ascending order, and whether older ones were left out. Read
 * newest first, a page at a time, until `limit` and one more are seen (a review, 2026-12-05: the log was
 * read from its first row and cut at `limit`, so past 1,000 older rows yesterday's RevokeApiKey was
 * absent). A server from before `newest_first` answers ascending, told by its ids: its log is then read
 * to the end, keeping the newest `limit`.
 */
export async function newestEvents<E extends { id: bigint }>(
  page: AuditPage<E>,
  limit: number,
  pageSize = PAGE,
): Promise<{ events: E[]; omitted: boolean }> {
  const wanted = limit + 1;
  const out = await page({ newestFirst: true, beforeId: 0n, afterId: 0n }, Math.min(pageSize, wanted));
  if (out.length > 1 && out[0]!.id < out[1]!.id) return forward(page, out, limit, pageSize);
  let full = out.length === Math.min(pageSize, wanted);
  while (out.length < wanted && full) {
    const n = Math.min(pageSize, wanted - out.length);
    const more = await page({ newestFirst: true, beforeId: out.at(-1)!.id, afterId: 0n }, n);
    out.push(...more);
    full = more.length === n;
  }
  return { events: out.slice(0, limit).reverse(), omitted: out.length > limit };
}

/** An older server's log read ascending to its end from `first` (its first page), the newest `limit` kept. */
async function forward<E extends { id: bigint }>(
  page: AuditPage<E>,
  first: E[],
  limit: number,
  pageSize: number,
): Promise<{ events: E[]; omitted: boolean }> {
  let kept: E[] = [];
  let omitted = false;
  let events = first;
  let asked = Math.min(pageSize, limit + 1);
  for (;;) {
    kept.push(...events);
    if (kept.length > limit) {
      omitted = true;
      kept = kept.slice(-limit);
    }
    if (events.length < asked) return { events: kept, omitted };
    asked = pageSize;
    events = await page({ newestFirst: false, beforeId: 0n, afterId: events.at(-1)!.id }, asked);
  }
}

/** One service's newest events since `since`, at most `limit`. */
function eventsOf(env: AdminEnv, source: Source, since: Date | undefined, limit: number) {
  const client = createClient(
    platformv1.AuditService,
    operatorTransport(env, source.address, source.identity),
  );
  const page: AuditPage<platformv1.AuditEvent> = async (query, n) =>
    (
      await client.listAuditEvents(
        { ...query, limit: n, ...(since ? { since: timestampFromDate(since) } : {}) },
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
    let omitted = false;
    const lists = await Promise.all(
      all.map((s) =>
        eventsOf(env, s, since, limit).then(
          (r) => {
            omitted ||= r.omitted;
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
    omitted ||= merged.length > limit;
    return {
      events: merged.slice(-limit),
      // Older events left out for --limit: say so, never a silent cut (narrow with --since or --service).
      ...(omitted ? { older_events_omitted: true } : {}),
      ...(unreadable.length ? { unreadable: unreadable.sort() } : {}),
    };
  },
};
