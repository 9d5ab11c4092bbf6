import type { OperationId } from './routes.js';

/** One entry of an operation's `x-codeSamples` (the vendor extension Redoc, Scalar and others render). */
export interface CodeSample {
  lang: 'Shell' | 'JavaScript' | 'Python';
  label: 'curl' | 'Node (SDK)' | 'Python (requests)';
  source: string;
}

const JOB = '0b3f5c1e-8f5a-4f7e-9a43-2f1f6f0f9d11';

const curl = (source: string): CodeSample => ({ lang: 'Shell', label: 'curl', source });
const node = (body: string): CodeSample => ({
  lang: 'JavaScript',
  label: 'Node (SDK)',
  source: `import { DncClient } from '@dnc-scrub/sdk';

const dnc = new DncClient({ apiKey: process.env.DNC_API_KEY, baseUrl: process.env.DNC_BASE_URL });
${body}`,
});
const python = (body: string): CodeSample => ({
  lang: 'Python',
  label: 'Python (requests)',
  source: `import os, uuid, requests

BASE = os.environ["DNC_BASE_URL"]
AUTH = {"Authorization": f"Bearer {os.environ['DNC_API_KEY']}"}
${body}`,
});

/**
 * Examples of every operation in curl, Node (the SDK) and Python (requests). The OpenAPI document carries them
 * as `x-codeSamples` and renders them into each operation's description, so the /docs page shows them too.
 */
export const CODE_SAMPLES: Record<OperationId, CodeSample[]> = {
  getHealth: [
    curl('curl -s "$DNC_BASE_URL/v1/health"'),
    {
      lang: 'JavaScript',
      label: 'Node (SDK)',
      source: `// No key needed; plain fetch.
const res = await fetch(\`\${process.env.DNC_BASE_URL}/v1/health\`);
console.log(res.status, await res.json()); // 200 { ok: true }`,
    },
    {
      lang: 'Python',
      label: 'Python (requests)',
      source: `import os, requests

print(requests.get(f"{os.environ['DNC_BASE_URL']}/v1/health", timeout=5).json())  # {'ok': True}`,
    },
  ],
  getReady: [
    curl('curl -s -o /dev/null -w "%{http_code}\\n" "$DNC_BASE_URL/v1/ready"   # 200 ready, 503 not ready'),
    {
      lang: 'JavaScript',
      label: 'Node (SDK)',
      source: `const res = await fetch(\`\${process.env.DNC_BASE_URL}/v1/ready\`);
console.log(res.status === 200 ? 'ready' : 'not ready');`,
    },
    {
      lang: 'Python',
      label: 'Python (requests)',
      source: `import os, requests

r = requests.get(f"{os.environ['DNC_BASE_URL']}/v1/ready", timeout=5)
print("ready" if r.status_code == 200 else "not ready")`,
    },
  ],
  scrub: [
    curl(`curl -s -X POST "$DNC_BASE_URL/v1/scrub" \\
  -H "Authorization: Bearer $DNC_API_KEY" \\
  -H "Content-Type: application/json" \\
  -H "Idempotency-Key: $(uuidgen)" \\
  -d '{"country":"co","phones":["+57 601 234 5678","3001234567","call me"]}'`),
    node(`// Retries 409 in progress, 429 (not customer_quota_exceeded) and 503 with the same Idempotency-Key.
const result = await dnc.scrub({ country: 'co', phones: ['+57 601 234 5678', '3001234567', 'call me'] });
console.log(result.summary, result.invalid_numbers);`),
    python(`import random, time

body = {"country": "co", "phones": ["+57 601 234 5678", "3001234567", "call me"]}
key = str(uuid.uuid4())  # one key per logical request, the same on every retry
for attempt in range(6):
    r = requests.post(f"{BASE}/v1/scrub", json=body, timeout=30,
                      headers={**AUTH, "Idempotency-Key": key})
    if r.status_code == 200:
        print(r.json()["summary"])
        break
    code = r.json().get("error")
    retry = r.status_code == 503 or code == "idempotency_request_in_progress" or (
        r.status_code == 429 and code != "customer_quota_exceeded")
    if not retry or attempt == 5:
        raise RuntimeError(f"{r.status_code} {code} (request id {r.headers.get('X-Request-Id')})")
    # Bounded exponential backoff with jitter, never sooner than Retry-After.
    backoff = random.uniform(0, min(30, 2 ** attempt))
    time.sleep(max(backoff, int(r.headers.get("Retry-After", 0))))`),
  ],
  createScrubJob: [
    curl(`curl -s -X POST "$DNC_BASE_URL/v2/scrub" \\
  -H "Authorization: Bearer $DNC_API_KEY" \\
  -H "Content-Type: application/json" \\
  -H "Idempotency-Key: $(uuidgen)" \\
  -d @body.json     # {"country":"co","phones":[... up to 500,000 ...]}`),
    node(`const job = await dnc.jobs.create({ country: 'co', phones: bigList });
console.log(job.job_id, job.status); // queued
// or all in one: create, wait (polling with backoff), read the result
const result = await dnc.jobs.run({ country: 'co', phones: bigList });`),
    python(`r = requests.post(f"{BASE}/v2/scrub", timeout=30,
                  json={"country": "co", "phones": big_list},
                  headers={**AUTH, "Idempotency-Key": str(uuid.uuid4())})
r.raise_for_status()
job = r.json()
print(job["job_id"], job["status"])  # queued`),
  ],
  getScrubJob: [
    curl(`curl -s "$DNC_BASE_URL/v2/scrub/${JOB}" -H "Authorization: Bearer $DNC_API_KEY"`),
    node(`const job = await dnc.jobs.get('${JOB}');
// or poll until terminal, with bounded backoff, honoring Retry-After:
const done = await dnc.jobs.wait('${JOB}', { onProgress: (j) => console.log(j.status) });`),
    python(`import time

delay = 1
while True:
    r = requests.get(f"{BASE}/v2/scrub/${JOB}", headers=AUTH, timeout=30)
    if r.status_code not in (200, 429, 503):  # 429 and 503: wait and poll again
        r.raise_for_status()
    if r.status_code == 200:
        job = r.json()
        if job["status"] in ("succeeded", "failed", "cancelled", "expired"):
            break
    time.sleep(max(delay, int(r.headers.get("Retry-After", 0))))
    delay = min(delay * 2, 15)
print(job["status"], job.get("error"))`),
  ],
  getScrubJobResult: [
    curl(`curl -s "$DNC_BASE_URL/v2/scrub/${JOB}/result" -H "Authorization: Bearer $DNC_API_KEY"`),
    node(`const result = await dnc.jobs.result('${JOB}');
console.log(result.summary);`),
    python(`r = requests.get(f"{BASE}/v2/scrub/${JOB}/result", headers=AUTH, timeout=60)
if r.status_code == 409:
    print("not ready:", r.json()["error"])  # job_result_not_ready: poll the job first
else:
    r.raise_for_status()
    print(r.json()["summary"])`),
  ],
  cancelScrubJob: [
    curl(`curl -s -X POST "$DNC_BASE_URL/v2/scrub/${JOB}/cancel" -H "Authorization: Bearer $DNC_API_KEY"`),
    node(`const job = await dnc.jobs.cancel('${JOB}'); // idempotent
console.log(job.status, job.cancel_requested ?? false);`),
    python(`r = requests.post(f"{BASE}/v2/scrub/${JOB}/cancel", headers=AUTH, timeout=30)
r.raise_for_status()
print(r.status_code, r.json()["status"])  # 200 cancelled (or terminal), 202 running + cancel_requested`),
  ],
};

const FENCE: Record<CodeSample['lang'], string> = { Shell: 'sh', JavaScript: 'js', Python: 'python' };

/** The samples as a Markdown section for an operation's description (Swagger UI renders descriptions). */
export function codeSamplesMarkdown(operationId: OperationId): string {
  return `\n\n**Examples**\n\n${CODE_SAMPLES[operationId]
    .map((s) => `${s.label}:\n\n\`\`\`${FENCE[s.lang]}\n${s.source}\n\`\`\``)
    .join('\n\n')}`;
}

/** Adds `x-codeSamples` to every operation of `paths` and the same samples to its description. */
export function addCodeSamples(paths: Record<string, Record<string, unknown>>): void {
  for (const item of Object.values(paths)) {
    for (const operation of Object.values(item)) {
      if (operation === null || typeof operation !== 'object' || !('operationId' in operation)) continue;
      const op = operation as {
        operationId: OperationId;
        description?: string;
        'x-codeSamples'?: CodeSample[];
      };
      op['x-codeSamples'] = CODE_SAMPLES[op.operationId];
      op.description = (op.description ?? '') + codeSamplesMarkdown(op.operationId);
    }
  }
}
