import { create } from '@bufbuild/protobuf';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import type { HandlerContext } from '@connectrpc/connect';
import { Code, ConnectError, type Logger, readPublicReason } from '@dnc/kit';
import { admissionv1 } from '@dnc/proto';
import { describe, expect, it } from 'vitest';
import { type AdminDeps, admissionAdminService } from '../src/admin.js';

const silent = { warn() {}, info() {}, error() {}, debug() {} } as unknown as Logger;

/** The admin service over a maintenance table in memory whose publish to NATS KV fails while `nats.down`. */
function service() {
  const nats = { down: false };
  const windows = new Map<string, Date>();
  let published = 0;
  const deps = {
    maintenance: {
      async setMaintenance(country: string, until: Date) {
        windows.set(country, until);
      },
      async clearMaintenance(country: string) {
        windows.delete(country);
      },
      async maintenanceUntil(country: string) {
        return windows.get(country);
      },
      async maintenanceWindows() {
        return new Map(windows);
      },
    },
    directory: { instances: () => [] },
    logger: silent,
    async publishCountryStatus() {
      if (nats.down) throw new Error('TIMEOUT (NATS unreachable)');
      published++;
    },
  } as unknown as AdminDeps;
  return { admin: admissionAdminService(deps), nats, windows, published: () => published };
}

async function failure(call: unknown): Promise<ConnectError> {
  try {
    await call;
  } catch (error) {
    return ConnectError.from(error);
  }
  throw new Error('expected the call to fail');
}

const ctx = {} as HandlerContext;
const setReq = (country: string, until: Date) =>
  create(admissionv1.SetMaintenanceRequestSchema, { country, until: timestampFromDate(until) });
const clearReq = (country: string) => create(admissionv1.ClearMaintenanceRequestSchema, { country });

// Found by two reviews (2026-12-05): SetMaintenance and ClearMaintenance wrote PostgreSQL, published the
// country's status to NATS KV (all the v2 workers read), logged a failed publish and answered OK: the
// operator saw the window declared while the workers never did (jobs ran on the copy declared wrong,
// and were charged), or a failed clear kept failing the country's jobs while admission admitted them.
describe('a maintenance change answers OK only once the workers can see it', () => {
  it('SetMaintenance: a failed publish answers Unavailable, recorded but not published; a retry publishes', async () => {
    const s = service();
    s.nats.down = true;
    const until = new Date(Date.now() + 3_600_000);
    const err = await failure(s.admin.setMaintenance(setReq('co', until), ctx));
    expect(err.code).toBe(Code.Unavailable);
    const reason = readPublicReason(err);
    expect(reason?.reason).toBe('platform_failure');
    expect(reason?.message).toMatch(/recorded but not yet published/);
    expect(reason?.message).toMatch(/retry/);
    // Recorded (admission refuses the country's requests at once) ...
    expect(s.windows.get('co')).toEqual(until);
    // ... and the same command again publishes it.
    s.nats.down = false;
    const r = await s.admin.setMaintenance(setReq('co', until), ctx);
    expect(r.countryStatus?.maintenanceUntil).toBeDefined();
    expect(s.published()).toBe(1);
  });

  it('ClearMaintenance: a failed publish answers Unavailable; a retry publishes', async () => {
    const s = service();
    await s.admin.setMaintenance(setReq('mx', new Date(Date.now() + 60_000)), ctx);
    s.nats.down = true;
    const err = await failure(s.admin.clearMaintenance(clearReq('mx'), ctx));
    expect(err.code).toBe(Code.Unavailable);
    expect(readPublicReason(err)?.message).toMatch(/recorded but not yet published/);
    expect(s.windows.has('mx')).toBe(false);
    s.nats.down = false;
    const r = await s.admin.clearMaintenance(clearReq('mx'), ctx);
    expect(r.countryStatus?.maintenanceUntil).toBeUndefined();
    expect(s.published()).toBe(2);
  });
});
