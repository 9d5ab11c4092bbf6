import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface RecordedCall {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
  at: number;
}

/**
 * One scripted answer; `drop` closes the connection without answering (a network error for the client); `cut`
 * sends the status, the headers (with the whole body's Content-Length) and half the body, then closes.
 */
export type Scripted =
  | {
      status: number;
      body?: unknown;
      headers?: Record<string, string>;
      cut?: boolean;
      /** The body (its whole Content-Length said first) in `pieces` writes, `gapMs` apart: a slow link. */
      trickle?: { pieces: number; gapMs: number };
    }
  | { drop: true };

/**
 * A real node:http server on port 0 that answers the n-th request with `script(call, n)` and records every call,
 * so tests can assert how many calls an SDK operation made, with which headers, and when.
 */
export async function startScriptedServer(script: (call: RecordedCall, n: number) => Scripted) {
  const calls: RecordedCall[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const call: RecordedCall = {
        method: req.method ?? '',
        url: req.url ?? '',
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
        at: Date.now(),
      };
      calls.push(call);
      const answer = script(call, calls.length - 1);
      if ('drop' in answer) {
        req.socket.destroy();
        return;
      }
      const payload = answer.body === undefined ? '' : JSON.stringify(answer.body);
      if (answer.cut) {
        res.writeHead(answer.status, {
          'content-type': 'application/json',
          'content-length': String(Buffer.byteLength(payload)),
        });
        res.write(payload.slice(0, Math.floor(payload.length / 2)), () => {
          setTimeout(() => req.socket.destroy(), 20);
        });
        return;
      }
      if (answer.trickle) {
        const { pieces, gapMs } = answer.trickle;
        const bytes = Buffer.from(payload);
        res.writeHead(answer.status, {
          'content-type': 'application/json',
          'content-length': String(bytes.length),
        });
        const size = Math.ceil(bytes.length / pieces);
        const write = (i: number) => {
          if (res.destroyed) return;
          if (i * size >= bytes.length) return void res.end();
          res.write(bytes.subarray(i * size, (i + 1) * size));
          setTimeout(() => write(i + 1), gapMs);
        };
        write(0);
        return;
      }
      res.writeHead(answer.status, {
        ...(payload ? { 'content-type': 'application/json' } : {}),
        ...answer.headers,
      });
      res.end(payload);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}`,
    calls,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve, reject) =>
        server.close((error) => (error ? reject(error) : resolve())),
      );
    },
  };
}

/** Plays the answers in order; the last one repeats. */
export function sequence(...answers: Scripted[]) {
  return (_call: RecordedCall, n: number): Scripted => answers[Math.min(n, answers.length - 1)] as Scripted;
}
