import { Code, ConnectError } from '@connectrpc/connect';
import { describe, expect, it } from 'vitest';
import { orgCommands } from '../src/commands/org.js';
import { fakeAdmission } from './fake-admission.js';

const create = orgCommands.find((c) => c.name === 'org create')!;

/** CreateOrganization answers from `answers` in turn (an error is thrown); what each call carried. */
async function admission(answers: (ConnectError | undefined)[]) {
  const seen: { orgId: string; name: string }[] = [];
  const env = await fakeAdmission({
    async createOrganization(req) {
      seen.push({ orgId: req.orgId, name: req.name });
      const error = answers[seen.length - 1];
      if (error) throw error;
      return { orgId: req.orgId };
    },
  });
  return { env, seen };
}

describe('dnc-admin org create: safe to send again', () => {
  it('an answer that did not arrive (unavailable, deadline) is asked again with the same id and name', async () => {
    const { env, seen } = await admission([
      new ConnectError('connection reset', Code.Unavailable),
      new ConnectError('too slow', Code.DeadlineExceeded),
    ]);
    const out = (await create.run({ name: 'Acme' }, env, [])) as { org_id: string };
    expect(seen).toHaveLength(3);
    expect(new Set(seen.map((s) => JSON.stringify(s))).size).toBe(1);
    expect(seen[0]).toEqual({ orgId: out.org_id, name: 'Acme' });
    expect(out.org_id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  });

  it('three attempts at most; a refusal is not sent again; each run chooses a new id', async () => {
    const down = new ConnectError('down', Code.Unavailable);
    const failing = await admission([down, down, down, undefined]);
    await expect(create.run({ name: 'Acme' }, failing.env, [])).rejects.toThrow(/down/);
    expect(failing.seen).toHaveLength(3);

    const refusing = await admission([new ConnectError('in use', Code.FailedPrecondition)]);
    await expect(create.run({ name: 'Acme' }, refusing.env, [])).rejects.toThrow(/in use/);
    expect(refusing.seen).toHaveLength(1);

    const fine = await admission([]);
    const a = (await create.run({ name: 'Acme' }, fine.env, [])) as { org_id: string };
    const b = (await create.run({ name: 'Acme' }, fine.env, [])) as { org_id: string };
    expect(a.org_id).not.toBe(b.org_id);
  });
});
