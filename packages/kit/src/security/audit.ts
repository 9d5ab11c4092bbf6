import { randomUUID } from 'node:crypto';
import { type DescMessage, ScalarType } from '@bufbuild/protobuf';
import { timestampDate, timestampFromDate } from '@bufbuild/protobuf/wkt';
import { Code, ConnectError, type Interceptor, type ServiceImpl } from '@connectrpc/connect';
import { healthv1, platformv1 } from '@dnc/proto';
import type pg from 'pg';
import type { Logger } from 'pino';
import { methodName } from './authorization.js';
import { CALLER, CALLER_SUBJECT } from './transport.js';

export interface AuditRecord {
  caller: string;
  /** The certificate subject's common name: which operator, when a person has their own certificate. */
  subject: string;
  method: string;
  targets: Record<string, string>;
  outcome: string;
  callId: string;
}

export interface AuditSink {
  append(record: AuditRecord): Promise<void>;
  list(opts: AuditQuery): Promise<platformv1.AuditEvent[]>;
}

/** A page of the log: ascending after `afterId`, or (`newestFirst`) descending below `beforeId` (0: the newest). */
export interface AuditQuery {
  since?: Date;
  afterId: bigint;
  limit: number;
  newestFirst?: boolean;
  beforeId?: bigint;
}

/**
 * The append-only audit log of one service, in that service's own schema (`<schema>.audit_log`,
 * created by the service's migrations, where a trigger refuses UPDATE, DELETE and TRUNCATE). No
 * service reads another's log: `dnc-admin audit` asks each one (AuditService) and merges.
 */
export class PostgresAuditLog implements AuditSink {
  private readonly table: string;

  constructor(
    private readonly pool: pg.Pool,
    schema: string,
    private readonly service: string,
  ) {
    if (!/^[a-z_][a-z0-9_]*$/.test(schema)) throw new Error(`bad schema name ${schema}`);
    this.table = `"${schema}".audit_log`;
  }

  async append(r: AuditRecord): Promise<void> {
    await this.pool.query(
      `INSERT INTO ${this.table} (caller, subject, method, targets, outcome, call_id)
       VALUES ($1, $2, $3, $4, $5, $6)`,
      [r.caller, r.subject, r.method, JSON.stringify(r.targets), r.outcome, r.callId],
    );
  }

  async list(opts: AuditQuery): Promise<platformv1.AuditEvent[]> {
    const page = opts.newestFirst
      ? { where: '($1::bigint = 0 OR a.id < $1)', order: 'a.id DESC', cursor: opts.beforeId ?? 0n }
      : { where: 'a.id > $1', order: 'a.id', cursor: opts.afterId };
    const { rows } = await this.pool.query<{
      id: string;
      at: Date;
      caller: string;
      subject: string;
      method: string;
      targets: Record<string, string>;
      outcome: string;
      call_id: string;
    }>(
      // Ordered by the column, a.id: `id` alone names the output's id::text, ordered as text ("10" < "9").
      `SELECT a.id::text AS id, at, caller, subject, method, targets, outcome, call_id::text FROM ${this.table} a
        WHERE ${page.where} AND ($2::timestamptz IS NULL OR at >= $2) ORDER BY ${page.order} LIMIT $3`,
      [page.cursor.toString(), opts.since ?? null, opts.limit],
    );
    return rows.map((r) => ({
      $typeName: 'dnc.platform.v1.AuditEvent' as const,
      id: BigInt(r.id),
      at: timestampFromDate(r.at),
      service: this.service,
      caller: r.subject ? `${r.caller} (${r.subject})` : r.caller,
      method: r.method,
      targets: r.targets,
      outcome: r.outcome,
      callId: r.call_id,
    }));
  }
}

const MAX_TARGET_LENGTH = 128;

/**
 * The ids a message names: top-level string fields called `*_id` or `country`. Nothing else of a
 * request or answer is ever written (not a limit, a name, a key or a number).
 */
export function targetIds(desc: DescMessage, message: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  if (!message || typeof message !== 'object') return out;
  for (const field of desc.fields) {
    if (field.fieldKind !== 'scalar' || field.scalar !== ScalarType.STRING) continue;
    if (!field.name.endsWith('_id') && field.name !== 'country') continue;
    const value = (message as Record<string, unknown>)[field.localName];
    if (typeof value === 'string' && value !== '') out[field.name] = value.slice(0, MAX_TARGET_LENGTH);
  }
  return out;
}

function outcomeOf(error: unknown): string {
  const code = ConnectError.from(error).code;
  return (Code[code] ?? String(code)).replace(/([a-z])([A-Z])/g, '$1_$2').toLowerCase();
}

/** The read-only probes every listener serves to every identity (grpc.health.v1, ServiceInfo). */
const UNAUDITED_SERVICES = new Set([healthv1.Health.typeName, platformv1.ServiceInfoService.typeName]);

/**
 * Every call through the admin listener is written down before it runs (`started`; when that write
 * fails the call does not run: no unaudited administration) and again when it ends (`ok` or its
 * status). `fixedTargets` are ids of the service itself (an adapter's country).
 */
export function auditInterceptor(
  sink: AuditSink,
  logger: Logger,
  fixedTargets: Record<string, string> = {},
): Interceptor {
  return (next) => async (req) => {
    // Health and ServiceInfo answer every identity and change nothing: not administration, and written
    // down they would let any certificate holder grow the append-only log without bound.
    if (UNAUDITED_SERVICES.has(req.service.typeName)) return next(req);
    const callId = randomUUID();
    const base = {
      caller: req.contextValues.get(CALLER) ?? 'unauthenticated',
      subject: req.contextValues.get(CALLER_SUBJECT) ?? '',
      method: methodName(req.service, req.method),
      callId,
    };
    const input = req.stream ? {} : targetIds(req.method.input, req.message);
    // The service's own ids win: a caller's `country` must not stand for the adapter's in the log.
    const targets = { ...input, ...fixedTargets };
    try {
      await sink.append({ ...base, targets, outcome: 'started' });
    } catch (error) {
      logger.error({ err: error, method: base.method }, 'audit log unavailable: admin call refused');
      throw new ConnectError('audit log unavailable', Code.Unavailable);
    }
    const finish = (outcome: string, more: Record<string, string> = {}) =>
      sink
        .append({ ...base, targets: { ...targets, ...more, ...fixedTargets }, outcome })
        .catch((error: unknown) => {
          logger.error({ err: error, method: base.method, callId }, 'audit outcome not written');
        });
    try {
      const res = await next(req);
      await finish('ok', res.stream ? {} : targetIds(req.method.output, res.message));
      return res;
    } catch (error) {
      await finish(outcomeOf(error));
      throw error;
    }
  };
}

/** A refused call on the admin listener is written down too (one entry; it never ran). */
/** Refused calls of one caller written one row each per minute; past it they are counted, not written. */
export const DENIED_ROWS_PER_MINUTE = 60;

/**
 * The audit of calls the authorization table refused on an admin listener: one row each, up to
 * `perMinute` per caller identity a minute. Past it (a workload hammering a method it may not call) the
 * refusals are counted, logged once, and written as one row (`refusals_not_written`) with the caller's
 * next refusal after the minute: the log stays bounded and the flood stays visible.
 */
export function auditDenied(sink: AuditSink, logger: Logger, perMinute = DENIED_ROWS_PER_MINUTE) {
  const windows = new Map<string, { start: number; rows: number; suppressed: number }>();
  const write = (record: Omit<AuditRecord, 'outcome' | 'callId'>) =>
    void sink.append({ ...record, outcome: 'permission_denied', callId: randomUUID() }).catch((error) => {
      logger.error({ err: error, method: record.method }, 'audit of a refused call not written');
    });
  return (record: Omit<AuditRecord, 'outcome' | 'callId'>): void => {
    const now = Date.now();
    let window = windows.get(record.caller);
    if (!window || now - window.start >= 60_000) {
      if (window && window.suppressed > 0)
        write({ ...record, targets: { refusals_not_written: String(window.suppressed) } });
      window = { start: now, rows: 0, suppressed: 0 };
      windows.set(record.caller, window);
    }
    if (window.rows >= perMinute) {
      if (window.suppressed++ === 0)
        logger.warn(
          { caller: record.caller, method: record.method, per_minute: perMinute },
          'refused calls past the audit budget: counted, not each written',
        );
      return;
    }
    window.rows++;
    write(record);
  };
}

export const MAX_AUDIT_PAGE = 1000;

export function auditService(sink: AuditSink): ServiceImpl<typeof platformv1.AuditService> {
  return {
    async listAuditEvents(req) {
      const limit = req.limit === 0 ? 100 : req.limit;
      if (limit > MAX_AUDIT_PAGE)
        throw new ConnectError(`limit must be at most ${MAX_AUDIT_PAGE}`, Code.InvalidArgument);
      const since = req.since ? timestampDate(req.since) : undefined;
      return {
        events: await sink.list({
          since,
          afterId: req.afterId,
          limit,
          newestFirst: req.newestFirst,
          beforeId: req.beforeId,
        }),
      };
    },
  };
}
