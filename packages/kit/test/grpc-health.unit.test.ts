import { fromBinary, toBinary } from '@bufbuild/protobuf';
import { healthv1 } from '@dnc/proto';
import * as grpc from '@grpc/grpc-js';
import { afterEach, describe, expect, it } from 'vitest';
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
});
