import type { Interceptor } from '@connectrpc/connect';
import { UUID_REGEXP } from '@dnc/api-contract/limits';
import {
  Code,
  ConnectError,
  Counter,
  type Logger,
  publicError,
  type Registry,
  readPublicReason,
  validationError,
} from '@dnc/kit';
import type { Rejection } from './domain/check-order.js';

export function requireUuid(value: string, name: string): string {
  if (!UUID_REGEXP.test(value)) throw validationError(`${name} must be a lowercase UUID`);
  return value;
}

/**
 * A v1 completion not committed because its caller stopped waiting before its commit began: nothing
 * charged, the caller aborts. Passes to the caller as it is (not a dependency failure).
 */
export class CallerGaveUp extends ConnectError {
  constructor() {
    super('the caller gave up before the completion was committed: nothing charged', Code.DeadlineExceeded);
  }
}

/** Idempotency 6: the original request is still running (409, Retry-After at least 1). */
export const inProgress = (retryAfterSeconds: number) =>
  publicError(Code.Aborted, 'idempotency_request_in_progress', {
    message: 'The original request is still being processed; retry with the same key.',
    retryAfterSeconds,
  });

/** Idempotency 7: the key was used for another request (409). */
export const keyReused = () =>
  publicError(Code.AlreadyExists, 'idempotency_key_reused', {
    message: 'This Idempotency-Key was used for another request; use a new key.',
  });

/**
 * A rejection of the check order (steps 5-7) as the public error of `country`, not counted yet: the
 * request's key may still answer for it (admit.ts replayPastGate), and only the answer is counted.
 */
export function rejectionError(r: Rejection, country: string): ConnectError {
  return publicError(r.code, r.reason, {
    message: r.message,
    country,
    ...(r.retryAfterSeconds !== undefined ? { retryAfterSeconds: r.retryAfterSeconds } : {}),
  });
}

/**
 * Admission's refusals as they leave the service: each one a public error, counted by reason in
 * `dnc_admission_rejections_total`; a dependency failing (Postgres, Redis, quota) becomes the public
 * platform failure, never an internal message.
 */
export class Refusals {
  private readonly rejections: Counter<'reason'>;

  constructor(
    metrics: Registry,
    private readonly logger: Logger,
  ) {
    this.rejections = new Counter({
      name: 'dnc_admission_rejections_total',
      help: 'Requests refused by admission, by public reason.',
      labelNames: ['reason'],
      registers: [metrics],
    });
  }

  /** Count a refusal by its public reason and return it (to throw). */
  reject(error: ConnectError): ConnectError {
    this.rejections.inc({ reason: readPublicReason(error)?.reason ?? 'internal' });
    return error;
  }

  /** The public platform failure (counted). */
  platformFailure(): ConnectError {
    return this.reject(
      publicError(Code.Unavailable, 'platform_failure', {
        message: 'A platform component is unavailable; retry later.',
        retryAfterSeconds: 2,
      }),
    );
  }

  /**
   * What a caller sees of a failure: public reasons pass unchanged, and so do the precondition and
   * not-found answers of Complete, Abort and ConfirmJob and a completion its caller gave up
   * (CallerGaveUp); anything else is a dependency failing, logged here and answered as the platform
   * failure.
   */
  toPublic(method: string, error: unknown): ConnectError {
    if (readPublicReason(error) || error instanceof CallerGaveUp) return ConnectError.from(error);
    const ce = ConnectError.from(error);
    // PERMISSION_DENIED: an Admit without a valid organization assertion (routes.ts), as it is.
    if (ce.code === Code.FailedPrecondition || ce.code === Code.NotFound || ce.code === Code.PermissionDenied)
      return ce;
    this.logger.error({ method, err: error }, 'admission dependency failed');
    return this.platformFailure();
  }

  /**
   * The same rule for every method of one service, as a server interceptor: `serviceName`'s handlers
   * throw what they meet, and this turns it into what the caller may see.
   */
  interceptor(serviceName: string): Interceptor {
    return (next) => async (req) => {
      if (req.service.typeName !== serviceName) return next(req);
      try {
        return await next(req);
      } catch (error) {
        throw this.toPublic(req.method.localName, error);
      }
    };
  }
}
