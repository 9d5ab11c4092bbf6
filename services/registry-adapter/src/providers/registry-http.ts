import https from 'node:https';

/** What a call to the remote registry can end with, other than an answer. */
export class RegistryHttpError extends Error {
  constructor(
    readonly kind: 'network' | 'timeout' | 'redirect' | 'too_large',
    message: string,
  ) {
    super(message);
    this.name = 'RegistryHttpError';
  }
}

export interface RegistryHttpOptions {
  /** `https://host[:port][/base]`: anything else is refused when the client is built. */
  baseUrl: string;
  /** Extra trust anchors (PEM) for a registry behind a private CA; replaces the system roots. */
  ca?: string;
  /** Parallel connections kept alive to the registry. */
  maxSockets: number;
}

/** The registry API must be HTTPS: phone numbers never travel in clear text to a third party. */
export function requireHttps(url: string): URL {
  const parsed = new URL(url);
  if (parsed.protocol !== 'https:') throw new Error('the remote registry URL must be https://');
  if (parsed.username || parsed.password)
    throw new Error('the remote registry URL must not carry credentials');
  return parsed;
}

/**
 * A small HTTPS client for the registry's lookup call, bounded on every side: TLS 1.2+ with
 * certificate verification, redirects never followed (a 3xx is an error, so numbers are never
 * re-sent to where a response points), at most `maxBytes` of body read (more, or a Content-Length
 * that announces more, aborts the call), and one deadline for the whole exchange, body included.
 */
export class RegistryHttp {
  private readonly base: URL;
  private readonly agent: https.Agent;

  constructor(o: RegistryHttpOptions) {
    this.base = requireHttps(o.baseUrl);
    this.agent = new https.Agent({
      keepAlive: true,
      maxSockets: o.maxSockets,
      minVersion: 'TLSv1.2',
      ...(o.ca ? { ca: o.ca } : {}),
    });
  }

  post(
    path: string,
    json: unknown,
    opts: { signal: AbortSignal; maxBytes: number },
  ): Promise<{ status: number; body: Buffer }> {
    const url = new URL(
      path.replace(/^\//, ''),
      this.base.href.endsWith('/') ? this.base : `${this.base.href}/`,
    );
    const payload = Buffer.from(JSON.stringify(json));
    return new Promise((resolve, reject) => {
      if (opts.signal.aborted) return reject(new RegistryHttpError('timeout', 'deadline passed'));
      let settled = false;
      const req = https.request(url, {
        method: 'POST',
        agent: this.agent,
        rejectUnauthorized: true,
        headers: {
          'content-type': 'application/json',
          'content-length': payload.length,
          accept: 'application/json',
        },
      });
      const settle = (error: RegistryHttpError | undefined, value?: { status: number; body: Buffer }) => {
        if (settled) return;
        settled = true;
        opts.signal.removeEventListener('abort', onAbort);
        if (error) {
          req.destroy();
          reject(error);
        } else resolve(value!);
      };
      const onAbort = () => settle(new RegistryHttpError('timeout', 'deadline passed'));
      opts.signal.addEventListener('abort', onAbort, { once: true });
      req.on('error', () => settle(new RegistryHttpError('network', 'request failed')));
      req.once('response', (res) => {
        const status = res.statusCode ?? 0;
        if (status >= 300 && status < 400)
          return settle(new RegistryHttpError('redirect', `redirect (${status}) refused`));
        const tooLarge = () => settle(new RegistryHttpError('too_large', 'response larger than allowed'));
        if (Number(res.headers['content-length'] ?? 0) > opts.maxBytes) return tooLarge();
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > opts.maxBytes) tooLarge();
          else chunks.push(chunk);
        });
        res.once('end', () => settle(undefined, { status, body: Buffer.concat(chunks) }));
        res.on('error', () => settle(new RegistryHttpError('network', 'response failed')));
      });
      req.end(payload);
    });
  }

  close(): void {
    this.agent.destroy();
  }
}

/**
 * The largest answer a lookup of `count` numbers can need: `{"registered":[...],"snapshot_id":"..."}`
 * with at most `false, ` and some whitespace per number, plus room for the envelope.
 */
export function lookupAnswerLimit(count: number): number {
  return 16 * 1024 + count * 16;
}
