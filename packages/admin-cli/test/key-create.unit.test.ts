import { create as make } from '@bufbuild/protobuf';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import { Code, ConnectError } from '@connectrpc/connect';
import { admissionv1 } from '@dnc/proto';
import { describe, expect, it } from 'vitest';
import { keyCommands } from '../src/commands/key.js';
import { fakeAdmission } from './fake-admission.js';

const create = keyCommands.find((c) => c.name === 'key create')!;
const ORG = '6f1f3a52-0d1e-4a8e-9c55-3a7c1e0b9d21';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

const key = (keyId: string, createdAt: Date, revoked = false) =>
  make(admissionv1.ApiKeySchema, {
    keyId,
    orgId: ORG,
    prefix: 'dnc_live_ab',
    createdAt: timestampFromDate(createdAt),
    ...(revoked ? { revokedAt: timestampFromDate(new Date()) } : {}),
  });

/**
 * An admission whose CreateApiKey answers `created` (an error is thrown; `made` says whether the key was
 * made before it), whose RevokeApiKey answers `revoked` and whose ListApiKeys answers `listed`; what each
 * call carried.
 */
async function admission(script: {
  created?: ConnectError;
  made?: boolean;
  revoked?: ConnectError;
  listed?: admissionv1.ApiKey[] | ConnectError;
}) {
  const calls: { method: string; keyId?: string; orgId: string }[] = [];
  const made = new Map<string, admissionv1.ApiKey>();
  const env = await fakeAdmission({
    async createApiKey(req) {
      calls.push({ method: 'create', keyId: req.keyId, orgId: req.orgId });
      if (script.made !== false) made.set(req.keyId, key(req.keyId, new Date()));
      if (script.created) throw script.created;
      return { keyId: req.keyId, apiKey: 'dnc_live_ab_secret' };
    },
    async revokeApiKey(req) {
      calls.push({ method: 'revoke', keyId: req.keyId, orgId: req.orgId });
      if (script.revoked) throw script.revoked;
      const k = made.get(req.keyId);
      if (!k) throw new ConnectError('no such key', Code.NotFound);
      k.revokedAt = timestampFromDate(new Date());
      return { apiKey: k };
    },
    async listApiKeys(req) {
      calls.push({ method: 'list', orgId: req.orgId });
      if (script.listed instanceof ConnectError) throw script.listed;
      return { keys: [...(script.listed ?? []), ...made.values()] };
    },
  });
  return { env, calls, made };
}

async function failure(run: Promise<unknown>): Promise<string> {
  const error = await run.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(Error);
  return (error as Error).message;
}

describe('dnc-admin key create: a key whose answer is lost is never left active unseen', () => {
  it('answered: the key is shown once, made under an id the CLI chose', async () => {
    const { env, calls } = await admission({});
    const out = (await create.run({ org: ORG }, env, [])) as { key_id: string; api_key: string };
    expect(calls).toEqual([{ method: 'create', keyId: out.key_id, orgId: ORG }]);
    expect(out.key_id).toMatch(UUID);
    expect(out.api_key).toBe('dnc_live_ab_secret');
  });

  it('made, its answer lost (unavailable): revoked by the id chosen for it, and the operator told so', async () => {
    const { env, calls, made } = await admission({
      created: new ConnectError('connection reset', Code.Unavailable),
    });
    const message = await failure(create.run({ org: ORG }, env, []));
    const keyId = calls[0]!.keyId!;
    expect(calls).toEqual([
      { method: 'create', keyId, orgId: ORG },
      { method: 'revoke', keyId, orgId: ORG },
    ]);
    expect(made.get(keyId)?.revokedAt).toBeDefined();
    expect(message).toBe(
      `key create did not complete (connection reset); key ${keyId} was made and is revoked: create another`,
    );
    expect(message).not.toContain('secret');
  });

  it('never made (deadline): the revocation finds no key, no newer active key is listed: "no key was made"', async () => {
    const { env, calls } = await admission({
      created: new ConnectError('too slow', Code.DeadlineExceeded),
      made: false,
      // Keys of the organization from before the attempt, and a newer one already revoked.
      listed: [
        key('7d0c2f4e-8a51-4c1b-9f0e-2b6d8e3a1c47', new Date(Date.now() - 2 * 3600_000)),
        key('0b9e5d3c-1f2a-4e6b-8c7d-9a0b1c2d3e4f', new Date(), true),
      ],
    });
    const message = await failure(create.run({ org: ORG }, env, []));
    expect(calls.map((c) => c.method)).toEqual(['create', 'revoke', 'list']);
    expect(calls[1]).toEqual({ method: 'revoke', keyId: calls[0]!.keyId, orgId: ORG });
    expect(message).toBe('key create did not complete (too slow); no key was made: create another');
  });

  it('not found, yet an active key newer than the attempt exists (an admission that ignores key_id): not "no key"', async () => {
    const { env } = await admission({
      created: new ConnectError('connection reset', Code.Unavailable),
      made: false,
      listed: [key('5e4d3c2b-1a09-4f8e-8d7c-6b5a4f3e2d1c', new Date())],
    });
    const message = await failure(create.run({ org: ORG }, env, []));
    expect(message).toBe(
      `key create's outcome is unknown (connection reset): revoke the active keys of the organization you did not see (key list --org ${ORG})`,
    );
  });

  it('not found and the listing fails: the outcome is unknown, never "no key was made"', async () => {
    const { env } = await admission({
      created: new ConnectError('connection reset', Code.Unavailable),
      made: false,
      listed: new ConnectError('down', Code.Unavailable),
    });
    const message = await failure(create.run({ org: ORG }, env, []));
    expect(message).toContain("key create's outcome is unknown (connection reset)");
    expect(message).toContain(`key list --org ${ORG}`);
  });

  it('the revocation fails too: the exact command to run is given, with the key id and the organization', async () => {
    const { env, calls, made } = await admission({
      created: new ConnectError('connection reset', Code.Unavailable),
      revoked: new ConnectError('down', Code.Unavailable),
    });
    const message = await failure(create.run({ org: ORG }, env, []));
    const keyId = calls[0]!.keyId!;
    expect(made.get(keyId)?.revokedAt).toBeUndefined();
    expect(message).toBe(
      `key create's outcome is unknown (connection reset): revoke key ${keyId} (key revoke --key-id ${keyId} --org ${ORG}), then create another`,
    );
  });

  it('a refusal made nothing: passed on as it is, nothing revoked', async () => {
    for (const code of [
      Code.NotFound,
      Code.FailedPrecondition,
      Code.ResourceExhausted,
      Code.PermissionDenied,
    ]) {
      const { env, calls } = await admission({ created: new ConnectError('refused', code), made: false });
      const error = await create.run({ org: ORG }, env, []).catch((e: unknown) => e);
      expect(ConnectError.from(error).code).toBe(code);
      expect(calls.map((c) => c.method)).toEqual(['create']);
    }
  });
});
