// The conformance suite's connection to an adapter: plain gRPC (@grpc/grpc-js) with the contract's
// protobuf messages, exactly as the platform calls it, and the public reason of an error.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { create, fromBinary, toBinary } from '@bufbuild/protobuf';
import { BinaryReader } from '@bufbuild/protobuf/wire';
import { healthv1, platformv1, registryv1 } from '@dnc/proto';
import grpc from '@grpc/grpc-js';

const ADAPTER = '/dnc.registry.v1.RegistryAdapterService';
const ADMIN = '/dnc.registry.v1.RegistryAdminService';

function method(path, req, res) {
  return {
    path,
    serialize: (value) => Buffer.from(toBinary(req, create(req, value))),
    deserialize: (bytes) => fromBinary(res, bytes),
  };
}

const M = {
  check: method(`${ADAPTER}/Check`, registryv1.CheckRequestSchema, registryv1.CheckResponseSchema),
  describe: method(
    `${ADAPTER}/Describe`,
    registryv1.DescribeRequestSchema,
    registryv1.DescribeResponseSchema,
  ),
  load: method(`${ADMIN}/Load`, registryv1.LoadRequestSchema, registryv1.LoadResponseSchema),
  registryStatus: method(
    `${ADMIN}/GetRegistryStatus`,
    registryv1.GetRegistryStatusRequestSchema,
    registryv1.GetRegistryStatusResponseSchema,
  ),
  setDrill: method(`${ADMIN}/SetDrill`, registryv1.SetDrillRequestSchema, registryv1.SetDrillResponseSchema),
  health: method(
    '/grpc.health.v1.Health/Check',
    healthv1.HealthCheckRequestSchema,
    healthv1.HealthCheckResponseSchema,
  ),
};

/** The public reason in `grpc-status-details-bin` (google.rpc.Status with a dnc.platform.v1.ErrorInfo). */
export function errorReason(error) {
  const bin = error?.metadata?.get?.('grpc-status-details-bin')?.[0];
  if (!bin) return undefined;
  try {
    const status = new BinaryReader(bin);
    while (status.pos < status.len) {
      const [field, wire] = status.tag();
      if (field !== 3) {
        status.skip(wire);
        continue;
      }
      const any = new BinaryReader(status.bytes());
      let typeUrl = '';
      let value;
      while (any.pos < any.len) {
        const [f, w] = any.tag();
        if (f === 1) typeUrl = any.string();
        else if (f === 2) value = any.bytes();
        else any.skip(w);
      }
      if (typeUrl.endsWith('/dnc.platform.v1.ErrorInfo') && value) {
        return fromBinary(platformv1.ErrorInfoSchema, value).reason;
      }
    }
  } catch {
    return undefined;
  }
  return undefined;
}

/**
 * Mutual TLS as the platform speaks it: the certificate in `dir` (tls.crt, tls.key, ca.crt), and the
 * server accepted only if its certificate names spiffe://<trust domain>/registry-adapter-<country>.
 */
function tlsCredentials(dir, country) {
  const read = (f) => readFileSync(path.join(dir, f));
  const expected = `/registry-adapter-${country}`;
  return grpc.credentials.createSsl(read('ca.crt'), read('tls.key'), read('tls.crt'), {
    checkServerIdentity(_host, cert) {
      const uris = (cert.subjectaltname ?? '')
        .split(', ')
        .filter((n) => n.startsWith('URI:spiffe://'))
        .map((n) => n.slice(4));
      const ok =
        uris.length === 1 && uris[0].endsWith(expected) && !uris[0].slice(9, -expected.length).includes('/');
      return ok ? undefined : new Error(`the server is not registry-adapter-${country}`);
    },
  });
}

export class AdapterConnection {
  /**
   * `tls`: { caller: dir of a certificate allowed to Check (a gateway's or worker's), operator: dir of
   * the operator's certificate (Describe, Load, drills) }; without it, plaintext (a development stack).
   * `adminAddress`: the adapter's admin listener (Load, drills, Describe), when apart from `address`.
   */
  constructor(address, tls, country, adminAddress = address) {
    const target = address.replace(/^https?:\/\//, '');
    const adminTarget = adminAddress.replace(/^https?:\/\//, '');
    const options = {
      'grpc.max_receive_message_length': 64 * 1024 * 1024,
      'grpc.max_send_message_length': 64 * 1024 * 1024,
      // A name for TLS (SNI) when the address is an IP: the server's identity is checked by its
      // SPIFFE name above, never by host name.
      ...(tls ? { 'grpc.ssl_target_name_override': 'localhost' } : {}),
    };
    const credentials = (dir) => (tls ? tlsCredentials(dir, country) : grpc.credentials.createInsecure());
    this.client = new grpc.Client(target, credentials(tls?.caller), options);
    this.admin =
      tls || adminTarget !== target
        ? new grpc.Client(adminTarget, credentials(tls?.operator), options)
        : this.client;
  }

  unary(m, request, timeoutMs = 10_000, client = this.client) {
    return new Promise((resolve, reject) => {
      client.makeUnaryRequest(
        m.path,
        m.serialize,
        m.deserialize,
        request,
        new grpc.Metadata(),
        { deadline: Date.now() + timeoutMs },
        (error, response) => (error ? reject(error) : resolve(response)),
      );
    });
  }

  check(country, phones, timeoutMs) {
    return this.unary(M.check, { country, phones }, timeoutMs);
  }

  /**
   * Check with the request's fields as given (`phones` or `phone_list`); the answer or the error, and the
   * value of the response header `dnc-check-phone-list` (an adapter that reads `phone_list` sets it).
   */
  checkAs(request, timeoutMs = 10_000) {
    return new Promise((resolve) => {
      let header;
      const call = this.client.makeUnaryRequest(
        M.check.path,
        M.check.serialize,
        M.check.deserialize,
        request,
        new grpc.Metadata(),
        { deadline: Date.now() + timeoutMs },
        (error, response) => {
          header ??= error?.metadata?.get('dnc-check-phone-list')?.[0];
          resolve({ error, response, header: header === undefined ? undefined : String(header) });
        },
      );
      call.on('metadata', (metadata) => {
        header = metadata.get('dnc-check-phone-list')[0];
      });
    });
  }

  describe() {
    return this.unary(M.describe, {}, 10_000, this.admin);
  }

  /** The registry's current snapshot (admin), which a replica may not serve yet. */
  registryStatus() {
    return this.unary(M.registryStatus, {}, 10_000, this.admin);
  }

  health() {
    return this.unary(M.health, { service: '' });
  }

  setDrill(request) {
    return this.unary(M.setDrill, request, 10_000, this.admin);
  }

  /**
   * Client-streaming Load: header, chunks of lines, then the end (left out with `withoutEnd`: a stream cut
   * short, which the adapter must refuse). `allowRepeat`: the suite adds and removes the same fixture on every
   * run, a delta the adapter otherwise refuses as repeated after others. `asOf` (a Timestamp): when the
   * registry published the load; a removal must give one.
   */
  load(country, mode, lines, allowRepeat = false, withoutEnd = false, asOf = undefined) {
    return new Promise((resolve, reject) => {
      const call = this.admin.makeClientStreamRequest(
        M.load.path,
        M.load.serialize,
        M.load.deserialize,
        new grpc.Metadata(),
        { deadline: Date.now() + 60_000 },
        (error, response) => (error ? reject(error) : resolve(response)),
      );
      call.write({
        part: { case: 'header', value: { country, mode, allowRepeat, ...(asOf ? { asOf } : {}) } },
      });
      for (let i = 0; i < lines.length; i += 10_000) {
        call.write({ part: { case: 'chunk', value: { lines: lines.slice(i, i + 10_000) } } });
      }
      if (!withoutEnd) call.write({ part: { case: 'end', value: { lines: BigInt(lines.length) } } });
      call.end();
    });
  }

  close() {
    this.client.close();
    if (this.admin !== this.client) this.admin.close();
  }
}
