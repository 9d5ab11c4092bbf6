import { create, type DescMessage, type MessageShape, toBinary } from '@bufbuild/protobuf';
import { Code, ConnectError } from '@connectrpc/connect';
import type { ErrorCode } from '@dnc/api-contract/error-codes';
import { platformv1 } from '@dnc/proto';

export { Code, ConnectError };

/**
 * The reasons an error may carry across a service boundary: the public error codes of the contract,
 * and `conflict` for a transition an operator asked for that the current state does not allow (admin
 * RPCs only: no public route answers it). A misspelled reason fails the type-check.
 */
export type Reason = ErrorCode | 'conflict';

export interface PublicErrorOptions {
  retryAfterSeconds?: number;
  message?: string;
  country?: string;
  /** Further typed details (for example admission's RateLimitInfo). */
  details?: { desc: DescMessage; value: MessageShape<DescMessage> }[];
}

/**
 * The only way an error crosses a service boundary: a ConnectError with a real Code whose
 * ErrorInfo detail carries the public reason. The gateway's table alone maps it to HTTP.
 */
export function publicError(code: Code, reason: Reason, options: PublicErrorOptions = {}): ConnectError {
  const info = create(platformv1.ErrorInfoSchema, {
    reason,
    retryAfterSeconds: Math.max(0, Math.ceil(options.retryAfterSeconds ?? 0)),
    message: options.message ?? '',
    country: options.country ?? '',
  });
  const details: { desc: DescMessage; value: MessageShape<DescMessage> }[] = [
    { desc: platformv1.ErrorInfoSchema, value: info },
  ];
  for (const d of options.details ?? []) details.push(d);
  return new ConnectError(options.message ?? reason, code, undefined, details);
}

/** The refusal of an argument that breaks a documented rule; `message` says which. */
export function validationError(message: string): ConnectError {
  return publicError(Code.InvalidArgument, 'validation_error', { message });
}

export interface PublicReason {
  code: Code;
  reason: string;
  retryAfterSeconds: number;
  message: string;
  country: string;
}

/** Read the public reason of an error that came over the wire; undefined when it carries none. */
export function readPublicReason(error: unknown): PublicReason | undefined {
  const ce = ConnectError.from(error);
  const [info] = ce.findDetails(platformv1.ErrorInfoSchema);
  if (!info) return undefined;
  return {
    code: ce.code,
    reason: info.reason,
    retryAfterSeconds: info.retryAfterSeconds,
    message: info.message,
    country: info.country,
  };
}

export function findDetail<D extends DescMessage>(error: unknown, desc: D): MessageShape<D> | undefined {
  return ConnectError.from(error).findDetails(desc)[0];
}

/**
 * The error of one item of a batch call, for its answer: code, message and every typed detail (the
 * public reason, rate-limit figures), exactly what the single call's ConnectError would carry.
 */
export function rpcStatusOf(error: unknown): platformv1.RpcStatus {
  const ce = ConnectError.from(error);
  return create(platformv1.RpcStatusSchema, {
    code: ce.code,
    message: ce.rawMessage,
    details: ce.details.map((d) =>
      'desc' in d
        ? { type: d.desc.typeName, value: toBinary(d.desc, d.value as MessageShape<DescMessage>) }
        : { type: d.type, value: d.value },
    ),
  });
}

/** The ConnectError an item's RpcStatus stands for: what the single call would have raised. */
export function errorOfRpcStatus(status: platformv1.RpcStatus): ConnectError {
  const code = status.code in Code && status.code !== 0 ? (status.code as Code) : Code.Unknown;
  const error = new ConnectError(status.message, code);
  // As received over the wire: findDetails decodes them by type name.
  for (const d of status.details) error.details.push({ type: d.type, value: d.value });
  return error;
}

/** Connection-level failures of a dependency (PostgreSQL, Redis, NATS): an outage, not a bug. */
const OUTAGE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  '57P01',
  '57P02',
  '57P03',
  // lock_not_available, query_canceled: a statement bounded by its caller's deadline (lock_timeout,
  // statement_timeout) that ran out waiting; it changed nothing, and a retry later can succeed.
  '55P03',
  '57014',
]);
const OUTAGE_MESSAGE =
  /Connection terminated|timeout exceeded when trying to connect|connection error|Connection is closed|Query read timeout/i;

/**
 * True when `error` says a dependency could not be reached or dropped the connection (a PostgreSQL
 * restart, a reset socket): the caller gets the documented outage answer, 503 platform_failure.
 */
export function isDependencyOutage(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as { code?: unknown }).code;
  // SQLSTATE classes 08 (connection exception) and 53 (insufficient resources: no connection slot left,
  // out of memory, disk full): the database cannot serve now; a retry later can succeed.
  if (typeof code === 'string' && (OUTAGE_CODES.has(code) || /^(08|53)[0-9A-Z]{3}$/.test(code))) return true;
  return OUTAGE_MESSAGE.test(error.message);
}
