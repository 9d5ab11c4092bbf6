import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import { fromBinary, toBinary } from '@bufbuild/protobuf';
import { createClient } from '@connectrpc/connect';
import { connectNodeAdapter, createGrpcTransport } from '@connectrpc/connect-node';
import { healthv1 } from '@dnc/proto';
import * as grpc from '@grpc/grpc-js';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { HealthState, healthService } from '../src/health.js';
import { InFlight, rpcMetrics, trackCalls } from '../src/rpc-calls.js';
import { Service } from '../src/service.js';

const {
  HealthCheckRequestSchema,
  HealthCheckResponseSchema,
  HealthCheckResponse_ServingStatus: Status,
} = healthv1;

/** A plain grpc-js client of grpc.health.v1, as Kubernetes' gRPC probe and grpc_health_probe call it. */
function probe(port: number, service = ''): Promise<{ status?: number; code?: number }> {
  const Client = grpc.makeGenericClientConstructor(
    {
      Check: {
        path: '/grpc.health.v1.Health/Check',
        requestStream: false,
        responseStream: false,
        requestSerialize: (m: { service: string }) =>
          Buffer.from(
            toBinary(HealthCheckRequestSchema, { $typeName: 'grpc.health.v1.HealthCheckRequest', ...m }),
          ),
        requestDeserialize: (b: Buffer) => fromBinary(HealthCheckRequestSchema, b),
        responseSerialize: () => Buffer.alloc(0),
        responseDeserialize: (b: Buffer) => fromBinary(HealthCheckResponseSchema, b),
      },
    },
    'Health',
  );
  const client = new Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
  return new Promise((resolve) => {
    client.makeUnaryRequest(
      '/grpc.health.v1.Health/Check',
      (m: { service: string }) =>
        Buffer.from(
          toBinary(HealthCheckRequestSchema, { $typeName: 'grpc.health.v1.HealthCheckRequest', ...m }),
        ),
      (b: Buffer) => fromBinary(HealthCheckResponseSchema, b),
      { service },
      new grpc.Metadata(),
      { deadline: Date.now() + 2000 },
      (err: grpc.ServiceError | null, res?: { status: number }) => {
        client.close();
        resolve(err ? { code: err.code } : { status: res?.status });
      },
    );
  });
}

describe('grpc.health.v1 answers honestly (issue 2: service kit)', () => {
  const services: Service[] = [];
  afterEach(async () => {
    for (const s of services.splice(0)) await s.shutdown('test');
  });

  async function start(dependencyUp: { value: boolean }) {
    const service = new Service({
      name: 'probe-test',
      version: '1.2.3',
      logLevel: 'silent',
      shutdownTimeoutMs: 2000,
      healthPort: 0,
      security: { mode: 'plaintext', identity: 'quota', trustDomain: 'dnc.internal' },
    });
    services.push(service);
    service.health.require('store', async () => dependencyUp.value);
    await service.health.start();
    await service.startGrpcServer({
      port: 0,
      routes: () => {},
      serviceNames: ['dnc.test.v1.Probe'],
    });
    // Probes use the plaintext health listener (no client certificate, health only).
    return { service, port: service.healthListenPort! };
  }

  it('SERVING while every required dependency is up, NOT_SERVING while one is down', async () => {
    const up = { value: true };
    const { service, port } = await start(up);
    expect(await probe(port)).toEqual({ status: Status.SERVING });
    expect(await probe(port, 'dnc.test.v1.Probe')).toEqual({ status: Status.SERVING });
    up.value = false;
    await new Promise((r) => setTimeout(r, 1300));
    expect(await probe(port)).toEqual({ status: Status.NOT_SERVING });
    up.value = true;
    await new Promise((r) => setTimeout(r, 1300));
    expect(await probe(port)).toEqual({ status: Status.SERVING });
    expect(service.health.serving).toBe(true);
  });

  it('answers NOT_FOUND for an unknown service name', async () => {
    const { port } = await start({ value: true });
    expect(await probe(port, 'no.such.Service')).toEqual({ code: grpc.status.NOT_FOUND });
  });

  it('NOT_SERVING as soon as draining starts', async () => {
    const { service, port } = await start({ value: true });
    service.health.setDraining();
    expect(await probe(port)).toEqual({ status: Status.NOT_SERVING });
  });
  // Found by a review of internal trust (2026-12-05): the probe listener, which asks for no certificate,
  // read a request of any size (connect's default bound is 4 GiB), so anything that reached the port
  // could make a service hold hundreds of MiB and be killed for its memory. A HealthCheckRequest is
  // a service name: the listener now refuses a message over HEALTH_READ_MAX_BYTES at once.
  it('the probe listener refuses a large request at once, without reading it whole', async () => {
    const { port } = await start({ value: true });
    const session = http2.connect(`http://127.0.0.1:${port}`);
    try {
      const stream = session.request({
        ':method': 'POST',
        ':path': '/grpc.health.v1.Health/Check',
        'content-type': 'application/grpc',
        te: 'trailers',
      });
      // A message that says it is 64 MiB long; 256 KiB of it sent and the stream left open.
      const prefix = Buffer.alloc(5);
      prefix.writeUInt32BE(64 * 1024 * 1024, 1);
      stream.write(Buffer.concat([prefix, Buffer.alloc(256 * 1024, 0x61)]));
      const status = await new Promise<string | undefined>((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error('no answer within 2 s: the body is being read')),
          2_000,
        );
        const settle = (headers: http2.IncomingHttpHeaders) => {
          if (headers['grpc-status'] === undefined) return;
          clearTimeout(timer);
          resolve(String(headers['grpc-status']));
        };
        stream.on('response', settle);
        stream.on('trailers', settle);
        stream.on('error', reject);
      });
      expect(status).toBe('8'); // RESOURCE_EXHAUSTED
      stream.close();
    } finally {
      session.destroy();
    }
    expect(await probe(port)).toEqual({ status: Status.SERVING });
  });
});

describe('grpc.health.v1 Watch and the drain', () => {
  it('a Watch ends with NOT_SERVING when draining starts: it never holds the drain', async () => {
    // Served calls stay in flight until they end, streams included, and a service's drain waits for
    // them (Service.shutdown): a Watch that went on forever would hold every shutdown to its bound.
    // The service listener's parts: the health service behind the call tracking, over HTTP/2.
    const logger = pino({ level: 'silent' });
    const state = new HealthState(logger);
    const inFlight = new InFlight();
    const server = http2.createServer(
      connectNodeAdapter({
        interceptors: [trackCalls(rpcMetrics(new Registry()), logger, inFlight)],
        routes: (router) => router.service(healthv1.Health, healthService(state, [])),
      }),
    );
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const { port } = server.address() as AddressInfo;
      const health = createClient(
        healthv1.Health,
        createGrpcTransport({ baseUrl: `http://127.0.0.1:${port}` }),
      );
      const seen: number[] = [];
      const watching = (async () => {
        for await (const m of health.watch({ service: '' })) seen.push(m.status);
      })();
      await expect.poll(() => seen, { timeout: 5_000 }).toEqual([Status.SERVING]);
      expect(inFlight.size).toBe(1);
      const started = Date.now();
      state.setDraining();
      await inFlight.waitIdle();
      expect(Date.now() - started).toBeLessThan(2_000);
      await watching;
      expect(seen).toEqual([Status.SERVING, Status.NOT_SERVING]);
    } finally {
      server.close();
    }
  });
});

describe('HealthState probes', () => {
  it('a probe still running is not started again: a hung dependency gets one probe, not one per tick', async () => {
    // A PostgreSQL that accepts connections and never answers: every tick's `SELECT 1` would wait in
    // the pool's queue behind the last, one more per second, for as long as it hangs.
    let calls = 0;
    let answer: ((ok: boolean) => void) | undefined;
    const state = new HealthState(pino({ level: 'silent' }), 50);
    state.require('db', () => {
      calls++;
      return new Promise<boolean>((resolve) => {
        answer = resolve;
      });
    });
    const starting = state.start();
    try {
      await starting; // the first probe times out (200 ms) without settling
      await new Promise((r) => setTimeout(r, 400));
      expect(calls).toBe(1);
      expect(state.serving).toBe(false);
      expect(state.failing()).toEqual(['db']);
      // Once it answers, the next tick probes again, and its answer counts.
      answer?.(true);
      await expect.poll(() => calls, { timeout: 2_000 }).toBe(2);
      answer?.(true);
      await expect.poll(() => state.serving, { timeout: 2_000 }).toBe(true);
    } finally {
      state.stop();
    }
  });
});
