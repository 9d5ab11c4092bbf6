import { randomUUID } from 'node:crypto';
import { Code, ConnectError } from '@connectrpc/connect';
import type { Security } from '@dnc/kit';
import { admissionv1, healthv1, jobsv1, platformv1, quotav1, registryv1 } from '@dnc/proto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call } from '../support/http.js';
import { loadRegistry, type SeededOrg, seedOrg } from '../support/seed.js';
import { startTestStack, type TestStack } from '../support/stack.js';

// Issue 13, tests: the gateway's identity cannot create a key, load a registry, set a quota or read
// another organization's job; the operator can, and each such call is in the audit log
// (`dnc-admin audit`), the refused ones too. Separate processes, real mutual TLS.

interface AuditLine {
  service: string;
  caller: string;
  method: string;
  targets: Record<string, string>;
  outcome: string;
}

const codeOf = (p: Promise<unknown>) =>
  p.then(
    () => 'ok' as const,
    (e: unknown) => ConnectError.from(e).code,
  );

describe('zero trust: the admin plane (issue 13)', () => {
  let stack: TestStack;
  let a: SeededOrg;
  let b: SeededOrg;
  let gateway: Security;
  let operator: Security;
  let jobId: string;

  beforeAll(async () => {
    stack = await startTestStack({ label: 'ztadmin', countries: ['co'] });
    a = await seedOrg(stack, ['co'], { name: 'Org A' });
    b = await seedOrg(stack, ['co'], { name: 'Org B' });
    await loadRegistry(stack, 'co', ['+57 300 123 4567']);
    gateway = await stack.security('gateway');
    operator = await stack.security('operator');
    const job = await call(stack.baseUrl, 'POST', '/v2/scrub', {
      apiKey: a.apiKey,
      idempotencyKey: randomUUID(),
      json: { country: 'co', phones: ['+57 300 123 4567', '+57 300 123 4568'] },
    });
    expect(job.status).toBe(202);
    jobId = job.body.job_id;
  });
  afterAll(async () => {
    await stack?.teardown();
  });

  const admissionAdmin = (s: Security) =>
    stack.client(admissionv1.AdmissionAdminService, s, 'admission', stack.addresses.admissionAdmin);
  const quotaAdmin = (s: Security) =>
    stack.client(quotav1.QuotaAdminService, s, 'quota', stack.addresses.quotaAdmin);
  const registryAdmin = (s: Security) =>
    stack.client(
      registryv1.RegistryAdminService,
      s,
      'registry-adapter-co',
      stack.addresses.adapterAdmins['co']!,
    );
  const jobsAdmin = (s: Security) =>
    stack.client(jobsv1.JobsAdminService, s, 'job-scheduler', stack.addresses.jobsAdmin);
  const load = (s: Security) =>
    registryAdmin(s).load(
      (async function* () {
        yield {
          part: { case: 'header' as const, value: { country: 'co', mode: registryv1.LoadMode.REPLACE } },
        };
        yield { part: { case: 'chunk' as const, value: { lines: ['+57 300 999 0000'] } } };
        yield { part: { case: 'end' as const, value: { lines: 1n } } };
      })(),
      { timeoutMs: 30_000 },
    );

  it("the gateway's identity: no key, no registry load, no quota, no other organization's job", async () => {
    expect(await codeOf(admissionAdmin(gateway).createApiKey({ orgId: b.orgId }))).toBe(
      Code.PermissionDenied,
    );
    expect(await codeOf(load(gateway))).toBe(Code.PermissionDenied);
    expect(await codeOf(quotaAdmin(gateway).setLimit({ orgId: b.orgId, country: 'co', limit: 1n }))).toBe(
      Code.PermissionDenied,
    );
    expect(await codeOf(jobsAdmin(gateway).getJobDetail({ jobId }))).toBe(Code.PermissionDenied);
    // Its data-plane job calls act for an organization only with admission's assertion of it: naming
    // the job's own organization without one is refused (zero-trust-org-assertion.e2e covers the rest).
    const jobs = stack.client(jobsv1.JobsService, gateway, 'job-scheduler', stack.addresses.jobs);
    expect(await codeOf(jobs.getJob({ orgId: a.orgId, jobId }))).toBe(Code.PermissionDenied);
    const firstChunk = async () => {
      for await (const chunk of jobs.getJobResult({ orgId: a.orgId, jobId })) return chunk;
      return undefined;
    };
    expect(await codeOf(firstChunk())).toBe(Code.PermissionDenied);
    // The registry still holds what the operator loaded: the refused Load changed nothing.
    const res = await call(stack.baseUrl, 'POST', '/v1/scrub', {
      apiKey: a.apiKey,
      idempotencyKey: randomUUID(),
      json: { country: 'co', phones: ['+57 300 123 4567'] },
    });
    expect(res.status).toBe(200);
    expect(res.body.summary).toMatchObject({ prohibited_numbers: 1 });
  });

  it('the operator can, and every administrative call is in the audit log, refused ones too', async () => {
    const since = new Date(Date.now() - 60_000).toISOString();
    const key = await admissionAdmin(operator).createApiKey({ orgId: b.orgId });
    expect(key.apiKey).toMatch(/^dnc_/);
    expect(
      await codeOf(quotaAdmin(operator).setLimit({ orgId: b.orgId, country: 'co', limit: 5_000n })),
    ).toBe('ok');
    const detail = await jobsAdmin(operator).getJobDetail({ jobId });
    expect(detail.orgId).toBe(a.orgId);
    expect(await codeOf(load(operator))).toBe('ok');

    const { events, unreadable } = (await stack.admin(['audit', '--since', since])) as {
      events: AuditLine[];
      unreadable?: string[];
    };
    expect(unreadable).toBeUndefined();
    const find = (caller: string, method: string, outcome: string, targets: Record<string, string> = {}) =>
      events.find(
        (e) =>
          e.caller.startsWith(caller) &&
          e.method.endsWith(method) &&
          e.outcome === outcome &&
          Object.entries(targets).every(([k, v]) => e.targets[k] === v),
      );
    const keyTargets = { org_id: b.orgId, key_id: key.keyId };
    expect(find('operator', 'AdmissionAdminService/CreateApiKey', 'ok', keyTargets)).toBeDefined();
    expect(find('operator', 'QuotaAdminService/SetLimit', 'ok', { org_id: b.orgId })).toBeDefined();
    expect(find('operator', 'JobsAdminService/GetJobDetail', 'ok', { job_id: jobId })).toBeDefined();
    expect(find('operator', 'RegistryAdminService/Load', 'ok', { country: 'co' })).toBeDefined();
    // Written before each call ran (the key's id is known then only when the caller chose it), and the gateway's
    // refused attempts are there as well.
    expect(
      find('operator', 'AdmissionAdminService/CreateApiKey', 'started', { org_id: b.orgId }),
    ).toBeDefined();
    for (const m of [
      'AdmissionAdminService/CreateApiKey',
      'QuotaAdminService/SetLimit',
      'RegistryAdminService/Load',
      'JobsAdminService/GetJobDetail',
    ])
      expect(find('gateway', m, 'permission_denied'), m).toBeDefined();
    // Never a secret or a number: the new key's secret and the loaded line appear nowhere.
    const text = JSON.stringify(events);
    expect(text).not.toContain(key.apiKey);
    expect(text).not.toContain('999 0000');
  });

  // Found by a review (2026-12-03): Health and ServiceInfo answer every identity on an admin listener, and
  // each call wrote two rows of the append-only audit log: any certificate holder could grow it without
  // bound and bury the operator's entries. They are probes, not administration: not written down.
  it('health and service-info probes on an admin listener add nothing to the audit log', async () => {
    const pg = (await import('pg')).default;
    const db = new pg.Client({ connectionString: stack.databaseUrl });
    await db.connect();
    const rows = async () => (await db.query('SELECT count(*)::int AS n FROM admission.audit_log')).rows[0].n;
    try {
      const before = await rows();
      const health = stack.client(healthv1.Health, gateway, 'admission', stack.addresses.admissionAdmin);
      const info = stack.client(
        platformv1.ServiceInfoService,
        gateway,
        'admission',
        stack.addresses.admissionAdmin,
      );
      for (let i = 0; i < 50; i++) {
        await health.check({ service: '' });
        await info.getServiceInfo({});
      }
      expect(await rows()).toBe(before);
      // An administrative call is still written down (started and ended).
      await admissionAdmin(operator).createApiKey({ orgId: b.orgId });
      expect(await rows()).toBe(before + 2);
    } finally {
      await db.end();
    }
  });

  it('the audit log is append-only: PostgreSQL refuses to change or remove a row', async () => {
    const pg = (await import('pg')).default;
    const db = new pg.Client({ connectionString: stack.databaseUrl });
    await db.connect();
    try {
      for (const sql of [
        'UPDATE admission.audit_log SET outcome = $1',
        'DELETE FROM admission.audit_log WHERE outcome <> $1',
        'TRUNCATE quota.audit_log',
      ]) {
        const params = sql.includes('$1') ? ['x'] : [];
        await expect(db.query(sql, params), sql).rejects.toThrow(/append-only/);
      }
    } finally {
      await db.end();
    }
  });
  // Found by a review (2026-12-03): each call the table refused on an admin listener wrote a row of the
  // append-only log: a workload hammering a method it may not call grew it without bound. One row each up
  // to 60 a minute per caller, then counted and written as one row with the caller's next refusal after
  // the minute. (Last in this file: it spends the gateway's budget for the minute.)
  it("a caller's refused calls past 60 a minute are counted, not each written", async () => {
    const pg = (await import('pg')).default;
    const db = new pg.Client({ connectionString: stack.databaseUrl });
    await db.connect();
    const refusedRows = async () =>
      (
        await db.query(
          `SELECT count(*)::int AS n FROM admission.audit_log WHERE caller = 'gateway' AND outcome = 'permission_denied'`,
        )
      ).rows[0].n as number;
    try {
      const before = await refusedRows();
      for (let i = 0; i < 100; i++)
        expect(await codeOf(admissionAdmin(gateway).createApiKey({ orgId: b.orgId }))).toBe(
          Code.PermissionDenied,
        );
      const written = (await refusedRows()) - before;
      expect(written).toBeGreaterThan(0);
      expect(written).toBeLessThanOrEqual(60);
    } finally {
      await db.end();
    }
  });
});
