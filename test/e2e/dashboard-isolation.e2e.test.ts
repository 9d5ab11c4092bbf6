import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DashboardClient } from '../support/dashboard.js';
import { call } from '../support/http.js';
import { expectInvariants } from '../support/invariants.js';
import { loadRegistry, type SeededOrg, seedOrg } from '../support/seed.js';
import { startTestStack, type TestStack } from '../support/stack.js';

// Issue 16, Tests: what the dashboard's backend lets a session do, against every service as its own
// process. A member cannot create or revoke keys; a session of organization A can read or change nothing
// of organization B (every route, with B's ids: 404 identical to a missing id); a state change without
// the CSRF token is refused; a key's secret is in no response after the creation response and in no log.
const PASSWORD = 'two tenants never meet';

interface Person {
  c: DashboardClient;
  email: string;
}

describe('dashboard backend: roles, organizations, CSRF, secrets (issue 16)', () => {
  let stack: TestStack;
  let a: SeededOrg;
  let b: SeededOrg;
  let ownerA: Person;
  let memberA: Person;
  let ownerB: Person;
  /** B's things, by the ids A would need to touch them. */
  const bIds: Record<string, string> = {};

  /** Invited by the operator (owners) or by an owner (members); password set; signed in. */
  async function person(orgId: string, role: 'owner' | 'member', inviter?: Person): Promise<Person> {
    const email = `${role}-${randomUUID().slice(0, 8)}@example.com`;
    const link = inviter
      ? (await inviter.c.post('/api/members/invitations', { email, role })).body.link
      : (
          (await stack.admin(['user', 'invite', '--org', orgId, '--email', email, '--role', role])) as {
            link: string;
          }
        ).link;
    const c = new DashboardClient(stack.addresses.dashboard);
    expect((await c.accept(link, PASSWORD)).status).toBe(201);
    expect((await c.signIn(email, PASSWORD)).status).toBe(200);
    return { c, email };
  }

  beforeAll(async () => {
    stack = await startTestStack({ label: 'dashboard_api', countries: ['co'] });
    a = await seedOrg(stack, ['co'], { name: 'Org A' });
    b = await seedOrg(stack, ['co'], { name: 'Org B' });
    await loadRegistry(stack, 'co', ['+57 300 123 4567']);
    ownerA = await person(a.orgId, 'owner');
    memberA = await person(a.orgId, 'member', ownerA);
    ownerB = await person(b.orgId, 'owner');

    // B's key, job, member and pending invitation.
    bIds['key'] = (await ownerB.c.post('/api/keys', { name: 'b key' })).body.key.id;
    const job = await call(stack.baseUrl, 'POST', '/v2/scrub', {
      apiKey: b.apiKey,
      idempotencyKey: randomUUID(),
      json: { country: 'co', phones: ['3001234567'] },
    });
    expect(job.status).toBe(202);
    bIds['job'] = job.body.job_id;
    const bMember = await person(b.orgId, 'member', ownerB);
    const members = (await ownerB.c.get('/api/members')).body.members as { id: string; email: string }[];
    bIds['member'] = members.find((m) => m.email === bMember.email)!.id;
    await ownerB.c.post('/api/members/invitations', {
      email: `pending-${randomUUID().slice(0, 6)}@example.com`,
      role: 'member',
    });
    bIds['invitation'] = (await ownerB.c.get('/api/members')).body.invitations[0].id;
  }, 240_000);

  afterAll(async () => {
    await stack?.teardown();
  });

  it('a member reads everything and changes nothing: no key created or revoked, no job cancelled, no invitation', async () => {
    for (const path of ['/api/keys', '/api/plan', '/api/usage', '/api/jobs', '/api/members', '/api/audit'])
      expect((await memberA.c.get(path)).status, path).toBe(200);
    const before = (await memberA.c.get('/api/keys')).body.keys;
    const create = await memberA.c.post('/api/keys', { name: 'member key' });
    expect([create.status, create.body.error]).toEqual([403, 'forbidden']);
    const revoke = await memberA.c.post(`/api/keys/${a.keyId}/revoke`);
    expect([revoke.status, revoke.body.error]).toEqual([403, 'forbidden']);
    expect((await memberA.c.get('/api/keys')).body.keys).toEqual(before);
    expect((await call(stack.baseUrl, 'GET', '/v1/health')).status).toBe(200);
    const stillWorks = await call(stack.baseUrl, 'POST', '/v1/scrub', {
      apiKey: a.apiKey,
      idempotencyKey: randomUUID(),
      json: { country: 'co', phones: ['3001234599'] },
    });
    expect(stillWorks.status).toBe(200);
    for (const [path, body] of [
      [`/api/jobs/${randomUUID()}/cancel`, {}],
      ['/api/members/invitations', { email: 'x@example.com', role: 'member' }],
      [`/api/members/${randomUUID()}/remove`, {}],
      [`/api/members/invitations/${randomUUID()}/revoke`, {}],
    ] as const)
      expect((await memberA.c.post(path, body)).status, path).toBe(403);
  });

  it("organization A's owner reaches nothing of B on any route: 404, the same as a missing id", async () => {
    const missing = randomUUID();
    const routes: [string, 'GET' | 'POST', (id: string) => string][] = [
      ['key', 'POST', (id) => `/api/keys/${id}/revoke`],
      ['job', 'GET', (id) => `/api/jobs/${id}`],
      ['job', 'POST', (id) => `/api/jobs/${id}/cancel`],
      ['member', 'POST', (id) => `/api/members/${id}/remove`],
      ['invitation', 'POST', (id) => `/api/members/invitations/${id}/revoke`],
    ];
    for (const [kind, method, path] of routes) {
      const theirs = await ownerA.c.request(method, path(bIds[kind]!));
      const absent = await ownerA.c.request(method, path(missing));
      const malformed = await ownerA.c.request(method, path('not-an-id'));
      expect(theirs.status, `${method} ${path(':id')}`).toBe(404);
      expect(theirs.text, `${method} ${path(':id')}`).toBe(absent.text);
      expect(malformed.text).toBe(absent.text);
    }
    // Lists of A hold nothing of B.
    const everything = (
      await Promise.all(
        ['/api/keys', '/api/plan', '/api/usage', '/api/jobs', '/api/members', '/api/audit'].map((p) =>
          ownerA.c.get(p),
        ),
      )
    )
      .map((r) => r.text)
      .join('\n');
    for (const id of [...Object.values(bIds), b.orgId, b.keyId, ownerB.email])
      expect(everything).not.toContain(id);
    expect(everything).not.toContain('Org B');
    // B's things are untouched.
    expect(
      (await ownerB.c.get('/api/keys')).body.keys.find((k: { id: string }) => k.id === bIds['key'])
        .revoked_at,
    ).toBeNull();
    expect((await ownerB.c.get(`/api/jobs/${bIds['job']}`)).body.job.status).not.toBe('cancelled');
    const bPeople = (await ownerB.c.get('/api/members')).body;
    expect(bPeople.members.map((m: { id: string }) => m.id)).toContain(bIds['member']);
    expect(bPeople.invitations.map((i: { id: string }) => i.id)).toContain(bIds['invitation']);
  });

  it('no route takes an organization from the browser: an org_id in a body or a query is refused or ignored', async () => {
    const withOrg = await ownerA.c.post('/api/keys', { name: 'x', org_id: b.orgId });
    expect([withOrg.status, withOrg.body.error]).toEqual([400, 'validation_error']);
    const listed = await ownerA.c.get(`/api/keys?org_id=${b.orgId}`);
    expect(listed.text).not.toContain(bIds['key']!);
  });

  it('a state change without the CSRF token is refused and changes nothing', async () => {
    const before = (await ownerA.c.get('/api/keys')).body.keys.length;
    const r = await ownerA.c.post('/api/keys', { name: 'no token' }, { csrf: null });
    expect([r.status, r.body.error]).toEqual([403, 'csrf_failed']);
    const revoke = await ownerA.c.post(`/api/keys/${a.keyId}/revoke`, {}, { csrf: null });
    expect(revoke.status).toBe(403);
    const otherSession = await ownerA.c.post('/api/keys', { name: 'B token' }, { csrf: ownerB.c.csrf });
    expect(otherSession.status).toBe(403);
    expect((await ownerA.c.get('/api/keys')).body.keys.length).toBe(before);
    // Without a session cookie at all: 401.
    const anonymous = new DashboardClient(stack.addresses.dashboard);
    expect((await anonymous.post('/api/keys', { name: 'anon' }, { csrf: ownerA.c.csrf })).status).toBe(401);
  });

  it("a key's secret is in its creation response only: no later response of any person, no log line", async () => {
    const created = await ownerA.c.post('/api/keys', { name: 'ci' });
    expect(created.status).toBe(201);
    expect(created.headers.get('cache-control')).toBe('no-store');
    const secret: string = created.body.secret;
    expect(secret).toMatch(/^dnc_[0-9a-f]{12}_[A-Za-z0-9_-]{43}$/);
    const use = await call(stack.baseUrl, 'POST', '/v1/scrub', {
      apiKey: secret,
      idempotencyKey: randomUUID(),
      json: { country: 'co', phones: ['3001234599'] },
    });
    expect(use.status).toBe(200);
    const revoked = await ownerA.c.post(`/api/keys/${created.body.key.id}/revoke`);
    expect(revoked.status).toBe(200);
    for (const p of [ownerA, memberA])
      for (const path of [
        '/api/keys',
        '/api/audit',
        '/api/members',
        '/api/session',
        '/api/usage',
        '/api/plan',
        '/api/jobs',
      ])
        await p.c.get(path);
    const creation = ownerA.c.seen.indexOf(created.text);
    const later = [...ownerA.c.seen.slice(creation + 1), ...memberA.c.seen, ...ownerB.c.seen].join('\n');
    expect(later).not.toContain(secret);
    expect(later).not.toContain(secret.slice(17));
    expect(stack.logs()).not.toContain(secret);
    expect(stack.logs()).not.toContain(secret.slice(17));
    await expectInvariants(stack, { canaries: [secret] });
    // The dashboard's pages never carry a phone number: the job pages show identity and timing only.
    expect((await ownerB.c.get(`/api/jobs/${bIds['job']}`)).text).not.toMatch(/3001234567/);
  });

  it('jobs page through more jobs than one page; the state filter holds; a cursor shows nothing of another organization', async () => {
    const submitted: string[] = [];
    for (let i = 0; i < 7; i++) {
      const job = await call(stack.baseUrl, 'POST', '/v2/scrub', {
        apiKey: a.apiKey,
        idempotencyKey: randomUUID(),
        json: { country: 'co', phones: ['3001234567'] },
      });
      expect(job.status).toBe(202);
      submitted.push(job.body.job_id);
    }
    for (const id of submitted)
      await expect
        .poll(
          async () => (await call(stack.baseUrl, 'GET', `/v2/scrub/${id}`, { apiKey: a.apiKey })).body.status,
          {
            timeout: 30_000,
          },
        )
        .toBe('succeeded');

    async function pages(query: string) {
      const out: string[][] = [];
      let cursor = '';
      do {
        const r = await ownerA.c.get(`/api/jobs?${query}${cursor ? `&cursor=${cursor}` : ''}`);
        expect(r.status).toBe(200);
        out.push(r.body.jobs.map((j: { id: string; status: string }) => `${j.status}:${j.id}`));
        cursor = r.body.next_cursor ?? '';
      } while (cursor);
      return out;
    }
    const everything = (await ownerA.c.get('/api/jobs?limit=100')).body.jobs.map(
      (j: { id: string; status: string }) => `${j.status}:${j.id}`,
    );
    expect(everything.length).toBeGreaterThanOrEqual(7);
    // Newest first: the seven in the reverse order of their submission, at the top.
    expect(everything.slice(0, 7).map((x: string) => x.split(':')[1])).toEqual([...submitted].reverse());
    const paged = await pages('limit=3');
    expect(paged.length).toBe(Math.ceil(everything.length / 3));
    expect(paged.slice(0, -1).every((p) => p.length === 3)).toBe(true);
    expect(paged.flat()).toEqual(everything);
    // The filter holds on every page.
    const succeeded = await pages('status=succeeded&limit=2');
    expect(succeeded.length).toBeGreaterThan(1);
    expect(succeeded.flat()).toEqual(everything.filter((x: string) => x.startsWith('succeeded:')));

    // The cap, and cursors that are not a page of this list.
    for (const query of [
      'limit=101',
      'limit=0',
      'limit=abc',
      'limit=2.5',
      'cursor=%21%21',
      `cursor=${'A'.repeat(201)}`,
    ])
      expect((await ownerA.c.get(`/api/jobs?${query}`)).body.error, query).toBe('validation_error');
    const first = (await ownerA.c.get('/api/jobs?status=succeeded&limit=2')).body.next_cursor as string;
    expect((await ownerA.c.get(`/api/jobs?status=failed&limit=2&cursor=${first}`)).body.error).toBe(
      'validation_error',
    );
    expect((await ownerA.c.get('/api/jobs?cursor=e30')).body.error).toBe('validation_error');
    // A's cursor in B's session pages through B's own jobs: nothing of A.
    const inB = await ownerB.c.get(`/api/jobs?status=succeeded&limit=2&cursor=${first}`);
    expect(inB.status).toBe(200);
    for (const j of inB.body.jobs as { id: string }[]) expect(submitted).not.toContain(j.id);
  });
  // Found by a review (2026-12-03): every 200 of a cancel was an audit event, a job that had ended (or was
  // cancelled already) included: the log said jobs were cancelled that succeeded.
  it('cancelling a job that has ended answers it as it is and records nothing', async () => {
    const job = await call(stack.baseUrl, 'POST', '/v2/scrub', {
      apiKey: a.apiKey,
      idempotencyKey: randomUUID(),
      json: { country: 'co', phones: ['3001234567'] },
    });
    expect(job.status).toBe(202);
    const id = job.body.job_id as string;
    await expect
      .poll(
        async () => (await call(stack.baseUrl, 'GET', `/v2/scrub/${id}`, { apiKey: a.apiKey })).body.status,
        {
          timeout: 30_000,
        },
      )
      .toBe('succeeded');
    for (let i = 0; i < 2; i++) {
      const r = await ownerA.c.post(`/api/jobs/${id}/cancel`, {});
      expect(r.status).toBe(200);
      expect(r.body.job.status).toBe('succeeded');
      // Said, so the page can tell the owner nothing was cancelled.
      expect(r.body.cancelled).toBe(false);
    }
    const events = (await ownerA.c.get('/api/audit')).body.events as { action: string; target: string }[];
    expect(events.filter((e) => e.action === 'job_cancelled' && e.target === id)).toEqual([]);
  });
});
