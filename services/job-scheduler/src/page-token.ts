import { UUID_REGEXP } from '@dnc/api-contract/limits';
import type { JobCursor } from './store/job-pages.js';

/**
 * The page token of ListOrganizationJobs: base64url of the last job's cursor and the status filter it
 * was listed with. Opaque to callers, checked strictly here: anything else, or a token of another
 * filter, is refused (the caller gets INVALID_ARGUMENT), never a silently different page. It holds no
 * organization: the query is always scoped to the caller's, so a token of another organization can
 * only page through the caller's own jobs.
 */
const AT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;
export const MAX_PAGE_TOKEN = 200;

export function encodePageToken(cursor: JobCursor, status: string): string {
  return Buffer.from(JSON.stringify({ a: cursor.at, i: cursor.id, s: status }), 'utf8').toString('base64url');
}

/** The cursor of a token listed with `status` ('' for none); undefined when it is not one. */
export function decodePageToken(token: string, status: string): JobCursor | undefined {
  if (token.length > MAX_PAGE_TOKEN || !/^[A-Za-z0-9_-]+$/.test(token)) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(token, 'base64url').toString('utf8'));
  } catch {
    return undefined;
  }
  if (typeof value !== 'object' || value === null) return undefined;
  const { a, i, s } = value as Record<string, unknown>;
  if (typeof a !== 'string' || !isTime(a)) return undefined;
  if (typeof i !== 'string' || !UUID_REGEXP.test(i) || s !== status) return undefined;
  return { at: a, id: i };
}

/**
 * A time PostgreSQL reads as one: of the form written (microseconds, Z) and a real moment of year 1 or
 * later. Date.parse takes 30 February (as 2 March) and year 0, which PostgreSQL refuses: the list failed as
 * an outage, not as the malformed token it is (found by a review, 2026-12-05).
 */
function isTime(a: string): boolean {
  if (!AT.test(a)) return false;
  const ms = Date.parse(a);
  if (Number.isNaN(ms)) return false;
  const back = new Date(ms).toISOString();
  return back.slice(0, 19) === a.slice(0, 19) && !back.startsWith('0000');
}
