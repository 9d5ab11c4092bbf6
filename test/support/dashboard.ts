/**
 * A person using the dashboard's backend the way its pages do (JSON, the session cookie, the CSRF
 * header), for tests that check what the backend allows without a browser.
 */
export interface DashboardResponse {
  status: number;
  headers: Headers;
  // biome-ignore lint/suspicious/noExplicitAny: tests read the JSON they expect
  body: any;
  text: string;
}

export class DashboardClient {
  /** The cookies the dashboard set (session, device), by name. */
  readonly cookies = new Map<string, string>();
  csrf = '';
  /** Every response body this client received, for leak checks. */
  readonly seen: string[] = [];

  constructor(readonly baseUrl: string) {}

  async request(
    method: 'GET' | 'POST',
    path: string,
    options: { json?: unknown; csrf?: string | null; headers?: Record<string, string> } = {},
  ): Promise<DashboardResponse> {
    const headers: Record<string, string> = { accept: 'application/json', ...options.headers };
    const cookie = this.cookieHeader();
    if (cookie) headers['cookie'] = cookie;
    if (method === 'POST') {
      headers['content-type'] = 'application/json';
      const csrf = options.csrf === undefined ? this.csrf : options.csrf;
      if (csrf) headers['x-csrf-token'] = csrf;
    }
    const res = await fetch(`${this.baseUrl}${path}`, {
      method,
      headers,
      ...(method === 'POST' ? { body: JSON.stringify(options.json ?? {}) } : {}),
    });
    for (const set of res.headers.getSetCookie()) {
      const pair = set.split(';')[0]!;
      const at = pair.indexOf('=');
      const [name, value] = [pair.slice(0, at), pair.slice(at + 1)];
      // A cleared cookie comes back empty (and expired).
      if (value) this.cookies.set(name, value);
      else this.cookies.delete(name);
    }
    const text = await res.text();
    this.seen.push(text);
    let body: unknown;
    try {
      body = text ? JSON.parse(text) : undefined;
    } catch {
      body = undefined;
    }
    return { status: res.status, headers: res.headers, body, text };
  }

  /** The Cookie header a browser would send. */
  cookieHeader(): string {
    return [...this.cookies].map(([name, value]) => `${name}=${value}`).join('; ');
  }

  get(path: string) {
    return this.request('GET', path);
  }

  post(
    path: string,
    json?: unknown,
    options: { csrf?: string | null; headers?: Record<string, string> } = {},
  ) {
    return this.request('POST', path, { json, ...options });
  }

  /** Accept an invitation link with a password (as the invitation page does). */
  async accept(link: string, password: string): Promise<DashboardResponse> {
    const token = new URL(link).hash.replace('#token=', '');
    return this.post('/api/invitations/accept', { token, password });
  }

  /** Sign in; keeps the session cookie and the CSRF token. */
  async signIn(email: string, password: string): Promise<DashboardResponse> {
    const r = await this.post('/api/session', { email, password });
    if (r.status === 200) this.csrf = r.body.csrf_token;
    return r;
  }
}
