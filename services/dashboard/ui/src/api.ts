/** The backend-for-frontend's JSON API. The CSRF token lives in memory only, never in storage. */
let csrfToken = '';

export function setCsrfToken(token: string): void {
  csrfToken = token;
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/**
 * Asks the person to confirm who they are (password, and a code with the second factor) when the server
 * answers `confirmation_required` (an owner's invitation, member removal or new key, some minutes after
 * the sign-in): true once confirmed, and the request is sent again; false when they cancelled.
 */
let confirmIdentity: (() => Promise<boolean>) | undefined;

export function onConfirmationRequired(ask: (() => Promise<boolean>) | undefined): void {
  confirmIdentity = ask;
}

async function request<T>(method: 'GET' | 'POST', path: string, body?: unknown, again = false): Promise<T> {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (method === 'POST') {
    headers['content-type'] = 'application/json';
    if (csrfToken) headers['x-csrf-token'] = csrfToken;
  }
  const response = await fetch(path, {
    method,
    headers,
    credentials: 'same-origin',
    cache: 'no-store',
    ...(method === 'POST' ? { body: JSON.stringify(body ?? {}) } : {}),
  });
  if (response.status === 204) return undefined as T;
  const data = (await response.json().catch(() => ({}))) as { error?: string; message?: string };
  if (response.status === 403 && data.error === 'confirmation_required' && confirmIdentity && !again) {
    if (await confirmIdentity()) return request<T>(method, path, body, true);
  }
  if (!response.ok)
    throw new ApiError(response.status, data.error ?? 'error', data.message ?? 'Something went wrong.');
  return data as T;
}

export const api = {
  get: <T>(path: string) => request<T>('GET', path),
  post: <T>(path: string, body?: unknown) => request<T>('POST', path, body),
};

/**
 * A change of the person's credentials (password, second factor on or off). The server ends every session
 * of the person, this one too, and answers a new one for this browser: its cookie is set, and its CSRF
 * token is in the answer, which the page goes on with (the old one is refused from now on).
 */
export async function changeCredentials(path: string, body: unknown): Promise<void> {
  // A server of the release before answers 204 and keeps the session: the change is done all the same.
  const renewed = await api.post<{ csrf_token: string } | undefined>(path, body);
  if (renewed?.csrf_token) setCsrfToken(renewed.csrf_token);
}

export interface Me {
  member: { id: string; email: string; role: 'owner' | 'member'; totp_enabled: boolean };
  organization: { name: string; suspended: boolean; activation_complete: boolean } | null;
  csrf_token: string;
}

export interface Key {
  id: string;
  name: string;
  prefix: string;
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
}

export interface Job {
  id: string;
  status: string;
  country: string;
  submitted_count: number;
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
  expires_at: string;
  error: string | null;
  cancel_requested: boolean;
}

export const COUNTRY_NAMES: Record<string, string> = {
  mx: 'Mexico',
  ar: 'Argentina',
  co: 'Colombia',
  es: 'Spain',
  au: 'Australia',
  sg: 'Singapore',
};

/** A date and time in the reader's locale, UTC named; '—' when unset. */
export function when(value: string | null | undefined): string {
  if (!value) return '—';
  return new Date(value).toLocaleString(undefined, {
    year: 'numeric',
    month: 'short',
    day: 'numeric',
    hour: '2-digit',
    minute: '2-digit',
    timeZone: 'UTC',
    timeZoneName: 'short',
  });
}

export function count(n: number): string {
  return n.toLocaleString();
}
