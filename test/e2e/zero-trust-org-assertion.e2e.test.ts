import { randomUUID } from 'node:crypto';
import { Code, ConnectError } from '@connectrpc/connect';
import { encodeOrgAssertion, ORG_ASSERTION_HEADER, OrgAssertionIssuer, type Security } from '@dnc/kit';
import { admissionv1, jobsv1 } from '@dnc/proto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call } from '../support/http.js';
import { loadRegistry, type SeededOrg, seedOrg } from '../support/seed.js';
import { startTestStack, type TestStack } from '../support/stack.js';

// Issue 13: "the job-scheduler hands any organization's result to whoever names the orgId". The job
// scheduler now acts for an organization only with admission's signed assertion of it, issued to the
// caller at Authenticate. The gateway's own identity, naming another organization's job, is refused
// with no assertion, with an assertion of its own organization, with one it forged and with an
// expired one; the public flow (Authenticate -> assertion -> JobsService) still works. Separate
// processes, real mutual TLS.

interface Refused {
  code: Code | 'ok';
  message: string;
}

const outcome = (p: Promise<unknown>): Promise<Refused> =>
  p.then(
    () => ({ code: 'ok' as const, message: '' }),
    (e: unknown) => {
      const ce = ConnectError.from(e);
      return { code: ce.code, message: ce.rawMessage };
    },
  );

describe('zero trust: organization assertions on the job scheduler (issue 13)', () => {
  let stack: TestStack;
  let a: SeededOrg;
  let b: SeededOrg;
  let gateway: Security;
  let jobs: ReturnType<typeof jobsClient>;
  let jobId: string;
  /** What Authenticate answers the gateway for B's key: an assertion of B. */
  let assertionOfB: string;
  let assertionOfA: string;

  const jobsClient = (s: Security) =>
    stack.client(jobsv1.JobsService, s, 'job-scheduler', stack.addresses.jobs);
  const headers = (token?: string) => (token ? { [ORG_ASSERTION_HEADER]: token } : {});
  const resultOf = async (orgId: string, token?: string) => {
    const parts: Uint8Array[] = [];
    for await (const m of jobs.getJobResult({ orgId, jobId }, { headers: headers(token), timeoutMs: 10_000 }))
      parts.push(m.chunk);
    return Buffer.concat(parts).toString('utf8');
  };

  beforeAll(async () => {
    stack = await startTestStack({ label: 'ztorg', countries: ['co'] });
    a = await seedOrg(stack, ['co'], { name: 'Org A' });
    b = await seedOrg(stack, ['co'], { name: 'Org B' });
    await loadRegistry(stack, 'co', ['+57 300 123 4567']);
    gateway = await stack.security('gateway');
    jobs = jobsClient(gateway);
    const submitted = await call(stack.baseUrl, 'POST', '/v2/scrub', {
      apiKey: a.apiKey,
      idempotencyKey: randomUUID(),
      json: { country: 'co', phones: ['+57 300 123 4567', '+57 300 123 4568'] },
    });
    expect(submitted.status).toBe(202);
    jobId = submitted.body.job_id;
    for (let i = 0; i < 120; i++) {
      const s = await call(stack.baseUrl, 'GET', `/v2/scrub/${jobId}`, { apiKey: a.apiKey });
      if (s.body.status === 'succeeded') break;
      await new Promise((r) => setTimeout(r, 250));
    }
    // The gateway's identity asks admission as it does for every request, with the keys it saw.
    const admission = stack.client(
      admissionv1.AdmissionService,
      gateway,
      'admission',
      stack.addresses.admission,
    );
    const authB = await admission.authenticate({ apiKey: b.apiKey, clientAddress: '127.0.0.1' });
    expect(authB.orgId).toBe(b.orgId);
    assertionOfB = authB.orgAssertion;
    const authA = await admission.authenticate({ apiKey: a.apiKey, clientAddress: '127.0.0.1' });
    assertionOfA = authA.orgAssertion;
    expect(assertionOfB).not.toBe('');
  });
  afterAll(async () => {
    await stack?.teardown();
  });

  it("refuses the gateway's identity another organization's job without a valid assertion of it", async () => {
    // (a) No assertion: naming the owner's organization is no longer enough.
    for (const attempt of [
      outcome(resultOf(a.orgId)),
      outcome(jobs.getJob({ orgId: a.orgId, jobId })),
      outcome(jobs.cancelJob({ orgId: a.orgId, jobId })),
    ]) {
      const r = await attempt;
      expect(r.code).toBe(Code.PermissionDenied);
      expect(r.message).toMatch(/organization assertion.*\(missing\)/);
    }
    // (b) An assertion of its own organization (B), naming A's.
    const own = await outcome(resultOf(a.orgId, assertionOfB));
    expect(own).toMatchObject({
      code: Code.PermissionDenied,
      message: expect.stringMatching(/wrong_organization/),
    });
    // (c) Forged: the gateway signs an assertion of A with its own certificate key.
    const now = Date.now();
    const claims = {
      v: 1 as const,
      org: a.orgId,
      sub: 'gateway',
      aud: ['job-scheduler'],
      iat: now,
      exp: now + 60_000,
    };
    if (gateway.mode !== 'mtls') throw new Error('the stack runs with mutual TLS');
    const { material } = gateway;
    const forged = encodeOrgAssertion(claims, (d) => material.sign(d));
    expect(await outcome(resultOf(a.orgId, forged))).toMatchObject({
      code: Code.PermissionDenied,
      message: expect.stringMatching(/wrong_signer/),
    });
    // B's genuine assertion with its organization rewritten to A: the signature no longer matches.
    const [, sig, cert] = assertionOfB.split('.');
    const payload = JSON.parse(Buffer.from(assertionOfB.split('.')[0]!, 'base64url').toString('utf8'));
    const rewritten = `${Buffer.from(JSON.stringify({ ...payload, org: a.orgId })).toString('base64url')}.${sig}.${cert}`;
    expect(await outcome(resultOf(a.orgId, rewritten))).toMatchObject({
      code: Code.PermissionDenied,
      message: expect.stringMatching(/bad_signature/),
    });
    // (c') Expired: an assertion of A signed with a genuine admission certificate of the platform CA,
    // but past its expiry.
    const admissionCert = await stack.security('admission');
    const expired = new OrgAssertionIssuer(admissionCert).issue(
      a.orgId,
      'gateway',
      ['job-scheduler'],
      now - 10 * 60_000,
    );
    expect(await outcome(resultOf(a.orgId, expired))).toMatchObject({
      code: Code.PermissionDenied,
      message: expect.stringMatching(/expired/),
    });
    // An assertion of A issued to another identity (the dashboard) is not the gateway's to present.
    const elsewhere = new OrgAssertionIssuer(admissionCert).issue(a.orgId, 'dashboard', ['job-scheduler']);
    expect(
      await outcome(jobs.getJob({ orgId: a.orgId, jobId }, { headers: headers(elsewhere) })),
    ).toMatchObject({
      code: Code.PermissionDenied,
      message: expect.stringMatching(/wrong_holder/),
    });

    // Admit for A (spending A's quota) is refused the same way: with no assertion, and with B's.
    const admission = stack.client(
      admissionv1.AdmissionService,
      gateway,
      'admission',
      stack.addresses.admission,
    );
    const admitFor = (orgAssertion: string) =>
      outcome(
        admission.admit({
          orgId: a.orgId,
          keyId: 'k',
          country: 'co',
          idempotencyKey: randomUUID(),
          fingerprint: 'v1:00',
          inputCount: 1,
          kind: admissionv1.RequestKind.SYNC,
          orgAssertion,
        }),
      );
    expect(await admitFor('')).toMatchObject({
      code: Code.PermissionDenied,
      message: expect.stringMatching(/missing/),
    });
    expect(await admitFor(assertionOfB)).toMatchObject({
      code: Code.PermissionDenied,
      message: expect.stringMatching(/wrong_organization/),
    });

    // Each refusal is counted by the job scheduler, by caller, method and reason.
    const metrics = await (
      await fetch(`http://127.0.0.1:${stack.addresses.metrics['job-scheduler']}/metrics`)
    ).text();
    for (const reason of [
      'missing',
      'wrong_organization',
      'wrong_signer',
      'bad_signature',
      'expired',
      'wrong_holder',
    ])
      expect(metrics, reason).toMatch(
        new RegExp(
          `dnc_org_assertion_refused_total\\{[^}]*caller="gateway"[^}]*reason="${reason}"[^}]*\\} [1-9]`,
        ),
      );
  });

  it('serves the organization with its own assertion, and the public API end to end', async () => {
    const detail = await jobs.getJob({ orgId: a.orgId, jobId }, { headers: headers(assertionOfA) });
    expect(detail.job?.jobId).toBe(jobId);
    expect(JSON.parse(await resultOf(a.orgId, assertionOfA)).summary.total_checked).toBe(2);
    // B's key, through the gateway, still cannot see A's job: its assertion is of B.
    const foreign = await call(stack.baseUrl, 'GET', `/v2/scrub/${jobId}/result`, { apiKey: b.apiKey });
    expect(foreign.status).toBe(404);
    const own = await call(stack.baseUrl, 'GET', `/v2/scrub/${jobId}/result`, { apiKey: a.apiKey });
    expect(own.status).toBe(200);
    expect(own.body.summary.total_checked).toBe(2);
  });
});
