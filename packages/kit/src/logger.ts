import { writeSync } from 'node:fs';
import { type Logger, pino } from 'pino';
import { requestLogFields } from './request-context.js';

export type { Logger };

/**
 * Paths never written to a log, whatever a caller passes: credentials, request bodies and phone
 * numbers. The censor replaces the value; the key stays so the shape of a log line is stable.
 */
/** Field names whose values are credentials or phone numbers, wherever they sit (three levels deep). */
const SECRET_FIELDS = [
  'authorization',
  'apiKey',
  'api_key',
  'credentials',
  'secret',
  'body',
  'phones',
  'phone',
  'numbers',
  'phonesJson',
  'phoneList',
  'phone_list',
  'lines',
  'input',
];
const REDACT_PATHS = [
  'key',
  'req.headers.authorization',
  'req.headers["idempotency-key"]',
  'headers.authorization',
  ...SECRET_FIELDS.flatMap((f) => [f, `*.${f}`, `*.*.${f}`]),
];

// A run of 6+ digits (optionally separated) in free text could be a phone number: mask it.
const DIGIT_RUN = /\+?\d(?:[\s.()-]*\d){5,}/g;
// An API key (`dnc_<12 hex>_<secret>`), mostly letters, which the digit mask would not catch.
const API_KEY = /dnc_[0-9a-f]{12}_[A-Za-z0-9_-]+/g;

export function maskDigits(text: string): string {
  return text.replace(API_KEY, '[redacted-key]').replace(DIGIT_RUN, '[redacted-digits]');
}

/**
 * `err` as written: its class and code and a masked message, never a stack or other fields (a pg error's
 * `detail` quotes row values, an ioredis one its command's arguments), also when it is no `Error`.
 */
function errFields(err: unknown): Record<string, unknown> {
  if (typeof err !== 'object' || err === null) return { message: maskDigits(String(err)) };
  const e = err as { name?: unknown; type?: unknown; code?: unknown; message?: unknown };
  const type = err instanceof Error ? err.name : typeof e.type === 'string' ? e.type : undefined;
  return {
    ...(type !== undefined ? { type } : {}),
    ...(typeof e.code === 'string' || typeof e.code === 'number' ? { code: e.code } : {}),
    ...(typeof e.message === 'string' ? { message: maskDigits(e.message) } : {}),
  };
}

/**
 * Standard output for the logs: pino's own destination (sonic-boom: asynchronous writes, flushed
 * synchronously when the process exits), whose exit flush is skipped when nobody reads standard
 * output any more. sonic-boom 4 retries a failed write of that flush every 100 ms for ever, EPIPE
 * included, which never succeeds; and when a write was still in flight at exit, the EPIPE that would
 * have silenced the stream was never seen. A service whose parent (the reader of its stdout:
 * `npm start`, a test or the chaos runner) had died so never exited, whatever signal it got but
 * SIGKILL. A write of zero bytes finds a closed socket (EPIPE) or descriptor (EBADF), and the flush is
 * skipped; a pipe without a reader takes it (Linux), and the flush is the one pino always did.
 */
export function stdoutDestination(): pino.DestinationStream {
  const destination = pino.destination({ dest: 1, sync: false });
  const flushSync = destination.flushSync.bind(destination);
  destination.flushSync = () => {
    try {
      writeSync(1, Buffer.alloc(0));
    } catch (error) {
      // Only a full pipe (EAGAIN, EBUSY) is worth the flush's retries: it is still read.
      const code = (error as NodeJS.ErrnoException).code;
      if (code !== 'EAGAIN' && code !== 'EBUSY') return;
    }
    flushSync();
  };
  return destination;
}

export function createLogger(
  service: string,
  level: string,
  destination: pino.DestinationStream = stdoutDestination(),
): Logger {
  return pino(
    {
      level,
      base: { service },
      // Every line written during a request carries its id (request-context.ts).
      mixin: requestLogFields,
      timestamp: pino.stdTimeFunctions.isoTime,
      redact: { paths: REDACT_PATHS, censor: '[redacted]' },
      formatters: {
        level: (label) => ({ level: label }),
      },
      serializers: {
        // Keep the class, code and a masked message; stack traces stay out of shipped logs.
        err: errFields,
      },
      hooks: {
        logMethod(args, method) {
          const masked = args.map((a) => (typeof a === 'string' ? maskDigits(a) : a)) as Parameters<
            typeof method
          >;
          method.apply(this, masked);
        },
      },
    },
    destination,
  );
}
