import { AsyncLocalStorage } from 'node:async_hooks';
import { randomUUID } from 'node:crypto';
import type { Interceptor } from '@connectrpc/connect';

/**
 * The request id of the public request a piece of work belongs to, from the gateway to every hop:
 * Connect calls carry it in this header (client and server interceptors below), JetStream work messages
 * in their headers, and every log line written while it is current carries it as `request_id` (the kit
 * logger's mixin). A client's own well-formed X-Request-Id is kept; otherwise the gateway makes one.
 */
export const REQUEST_ID_HEADER = 'x-request-id';

/** 1 to 128 characters of letters, digits and `. _ : -` (a UUID, a ULID, most tracing ids). */
const WELL_FORMED = /^[A-Za-z0-9._:-]{1,128}$/;
/**
 * What a request id must not be, since every log line of the request carries it unmasked: six to twenty
 * digits and separators only (a phone number, which the logger masks in a message), an id holding ten
 * digits or more in a row (a national number of the live countries; single separators between them
 * allowed: `lead-5215512345678`, `tel:55-1234-5678`), or an API key. Found by leak reviews (2026-12-05):
 * `X-Request-Id: 5215512345678` was written as it was into the logs of every service the request reached,
 * then the same number inside a longer id. A UUID or a ULID is never refused; a date (`2026-12-05`, eight
 * digits) inside an id is kept, an epoch in milliseconds (13 digits) is not.
 */
const PHONE_LIKE = /^\d(?:[.:_-]*\d){5,19}$/;
const HOLDS_PHONE = /\d(?:[.:_-]?\d){9}/;
const UUID_OR_ULID =
  /^(?:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|[0-9A-HJKMNP-TV-Z]{26})$/i;
const API_KEY_LIKE = /dnc_[0-9a-f]{12}_/i;

const storage = new AsyncLocalStorage<{ requestId: string }>();

export function isWellFormedRequestId(value: unknown): value is string {
  if (typeof value !== 'string' || !WELL_FORMED.test(value)) return false;
  if (UUID_OR_ULID.test(value)) return true;
  return !PHONE_LIKE.test(value) && !HOLDS_PHONE.test(value) && !API_KEY_LIKE.test(value);
}

/** The client's id when well-formed (and neither phone-like nor key-like), else a new UUID. */
export function acceptRequestId(value: unknown): string {
  return isWellFormedRequestId(value) ? value : randomUUID();
}

export function currentRequestId(): string | undefined {
  return storage.getStore()?.requestId;
}

/** Runs `fn` (and everything it starts) as work of that request. */
export function runWithRequestId<T>(requestId: string, fn: () => T): T {
  return storage.run({ requestId }, fn);
}

/** Log-line fields of the current request: the kit logger merges them into every line. */
export function requestLogFields(): { request_id?: string } {
  const requestId = storage.getStore()?.requestId;
  return requestId === undefined ? {} : { request_id: requestId };
}

/** Client side: a call made during a request carries its id. */
export const propagateRequestId: Interceptor = (next) => (req) => {
  const requestId = storage.getStore()?.requestId;
  if (requestId !== undefined && !req.header.has(REQUEST_ID_HEADER))
    req.header.set(REQUEST_ID_HEADER, requestId);
  return next(req);
};

/** Server side: the handler (and what it logs and calls) runs as work of the caller's request. */
export const adoptRequestId: Interceptor = (next) => (req) => {
  const requestId = req.header.get(REQUEST_ID_HEADER);
  return isWellFormedRequestId(requestId) ? storage.run({ requestId }, () => next(req)) : next(req);
};
