// `helm test` smoke test: one real request through the gateway Service.
// It prints statuses and counts only: never the API key, the phones or a response body.
const base = process.env.DNC_BASE_URL;
const apiKey = process.env.DNC_TEST_API_KEY;
const country = process.env.DNC_TEST_COUNTRY ?? 'co';

function fail(message) {
  console.error(`FAIL ${message}`);
  process.exit(1);
}

const health = await fetch(`${base}/v1/health`, { signal: AbortSignal.timeout(5000) });
const healthBody = await health.json().catch(() => null);
if (health.status !== 200 || healthBody?.ok !== true) fail(`GET /v1/health answered ${health.status}`);
if (health.headers.get('x-retention') !== 'zero') fail('GET /v1/health lacks x-retention: zero');
console.log('ok GET /v1/health 200');

if (apiKey) {
  // One structurally valid and one unparseable input: the summary must account for both.
  const phones = { co: '+57 601 2345678', mx: '+52 55 1234 5678', ar: '+54 11 4123 4567' };
  const body = { country, phones: [phones[country] ?? phones.co, 'not-a-number'] };
  const res = await fetch(`${base}/v1/scrub`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${apiKey}`,
      'content-type': 'application/json',
      'idempotency-key': `helm-test-${Date.now()}-${Math.random().toString(36).slice(2)}`,
    },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(20000),
  });
  const result = await res.json().catch(() => null);
  if (res.status !== 200) fail(`POST /v1/scrub answered ${res.status} ${result?.error ?? ''}`);
  const s = result?.summary;
  if (s?.total_checked !== 2 || s.prohibited_numbers + s.safe_numbers + s.invalid_numbers !== 2) {
    fail('POST /v1/scrub summary does not account for every input');
  }
  if (!result.invalid_numbers.some((i) => i.reason === 'unparseable')) fail('unparseable input not reported');
  console.log('ok POST /v1/scrub 200');
} else {
  console.log('skip POST /v1/scrub: no tests.apiKeySecret');
}
