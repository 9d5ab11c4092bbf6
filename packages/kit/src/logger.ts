import { type Logger, pino } from 'pino';
import { requestLogFields } from './request-context.js';

export type { Logger };

/**
 * Paths never written to a log, whatever a caller passes: credentials, request bodies and phone
 * numbers. The censor replaces the value; the key stays so the shape of a log line is stable.
 */
const REDACT_PATHS = [
  'authorization',
  'apiKey',
  'api_key',
  'key',
  'secret',
  'body',
  'phones',
  'phone',
  'input',
  'req.headers.authorization',
  'req.headers["idempotency-key"]',
  'req.body',
  'headers.authorization',
  '*.authorization',
  '*.apiKey',
  '*.api_key',
  '*.phones',
  '*.phone',
  '*.body',
  '*.input',
];

// A run of 6+ digits (optionally separated) in free text could be a phone number: mask it.
const DIGIT_RUN = /\+?\d(?:[\s.()-]*\d){5,}/g;

export function maskDigits(text: string): string {
  return text.replace(DIGIT_RUN, '[redacted-digits]');
}

export function createLogger(service: string, level: string, destination?: pino.DestinationStream): Logger {
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
        // Keep the class and a masked message; stack traces stay out of shipped logs.
        err: (err: unknown) =>
          err instanceof Error
            ? { type: err.name, message: maskDigits(err.message) }
            : typeof err === 'object' && err !== null
              ? err
              : { message: maskDigits(String(err)) },
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
