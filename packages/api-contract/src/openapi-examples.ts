// The examples and the prose of the OpenAPI document.
import { INVALID_REASON_DESCRIPTIONS, INVALID_REASONS, LIMITS } from './limits.js';
import type { JsonObject } from './openapi.js';
import { VERSIONING } from './versioning.js';

export const EXAMPLE_JOB_ID = '0b3f5c1e-8f5a-4f7e-9a43-2f1f6f0f9d11';
export const EXAMPLE_BASE = 'http://127.0.0.1:8080';

export const exampleJob = (status: string, extra: JsonObject = {}) => ({
  job_id: EXAMPLE_JOB_ID,
  status,
  country: 'co',
  // The job of `exampleRequest`: its result is `exampleResult` (spec: total_checked counts every submitted element).
  submitted_count: 4,
  created_at: '2026-09-01T12:00:00.000Z',
  status_url: `${EXAMPLE_BASE}/v2/scrub/${EXAMPLE_JOB_ID}`,
  result_url: `${EXAMPLE_BASE}/v2/scrub/${EXAMPLE_JOB_ID}/result`,
  cancel_url: `${EXAMPLE_BASE}/v2/scrub/${EXAMPLE_JOB_ID}/cancel`,
  expires_at:
    status === 'queued' || status === 'running'
      ? '2026-09-02T12:00:00.000Z'
      : status === 'succeeded'
        ? '2026-09-08T12:01:00.000Z'
        : '2026-10-01T12:01:00.000Z',
  ...extra,
});

export const exampleRequest = {
  country: 'co',
  phones: ['+57 601 234 5678', '3001234567', '3001234567', 'call me'],
};
export const exampleResult = {
  prohibited_numbers_to_call: ['3001234567', '3001234567'],
  safe_numbers_to_call: ['+57 601 234 5678'],
  invalid_numbers: [{ input: 'call me', reason: 'unparseable' }],
  summary: { total_checked: 4, prohibited_numbers: 2, safe_numbers: 1, invalid_numbers: 1 },
};

export const SAFE_MEANING =
  '`safe_numbers_to_call` means only that the number was not found in the selected registry at the time of ' +
  'the check. It does not prove consent (for example Spain requires prior consent for commercial calls), ' +
  'reachability, or compliance with other calling rules such as calling hours (for example Colombia, ' +
  'Ley 2300 of 2023).';

export const DESCRIPTION = `Checks an array of phone-number strings against the Do Not Call registry of one selected country and
returns the original inputs split into \`prohibited_numbers_to_call\`, \`safe_numbers_to_call\` and \`invalid_numbers\`.

- **v1** \`POST /v1/scrub\`: synchronous, up to ${LIMITS.v1MaxInputs.toLocaleString('en-US')} inputs, one complete result within a
  ${LIMITS.v1ExecutionBudgetSeconds}-second budget or an error (on overrun the whole request fails; it never becomes a background job).
  Nothing is persisted (\`x-retention: zero\`).
- **v2** \`POST /v2/scrub\`: durable job, up to ${LIMITS.v2MaxInputs.toLocaleString('en-US')} inputs, admitted within ${LIMITS.v2AdmissionBudgetSeconds} seconds; poll
  \`GET /v2/scrub/{job_id}\`, read \`GET /v2/scrub/{job_id}/result\` after success, cancel with
  \`POST /v2/scrub/{job_id}/cancel\`. Input and result are kept encrypted for a limited time (\`x-retention: transient-encrypted\`).

A result is always complete; there is never a partial result. Only JSON arrays are accepted (no CSV).
Registry type, provider, chunking, retries, cost and capacity are never exposed.

## What "safe" means

${SAFE_MEANING}

## Countries

Request schema codes: \`mx\`, \`ar\`, \`co\`, \`es\`, \`au\`, \`sg\`. Live catalog: \`mx\`, \`ar\`, \`co\`. \`es\`, \`au\`, \`sg\` are
planned (end of September 2026) technical codes only, not live coverage. Every real request also needs an active
country purchase, country activation, available quota and operational availability, checked at admission. A country
purchase for \`co\` becomes active immediately after the initial payment succeeds, with no manual step.

The service is not for national registry checks of other regions, consent checks or reachability checks.

## Job lifecycle (v2)

States: \`queued\`, \`running\` (active); \`succeeded\`, \`failed\`, \`cancelled\`, \`expired\` (terminal; a terminal job keeps its state).

| From | Trigger | To | Also happens |
|---|---|---|---|
| (admission) | \`POST /v2/scrub\` passes every admission check | queued | quota reserved; 202 |
| queued | execution starts | running | |
| running | every unit of the batch completes | succeeded | result kept 7 days; input due for purge |
| running | maintenance, temporary or inconclusive country failure, platform failure | failed | JobError set; quota released; no partial result |
| running | not terminal within 24 hours of admission | expired | JobError \`job_expired\`; quota released |
| queued | cancel | cancelled | immediate; quota released |
| running | cancel, no external call in progress | cancelled | result discarded; quota released |
| running | cancel while an external registry call is in progress | running, then cancelled once the call is reconciled | cancel accepted at once (202); quota released on reaching cancelled |
| terminal | cancel | unchanged | |

JobError mapping: known maintenance gives \`country_service_maintenance\`; temporary or inconclusive country execution (and a
paid country still pending activation) gives \`country_service_temporarily_unavailable\`; worker, storage or lease failure
gives \`platform_failure\`; the active-job hard cap gives \`job_expired\`; cancellation gives no JobError.

Input handling: the encrypted input becomes due for purge at terminalization; an unconfirmed upload is revalidated at the
24-hour hard cap; a failed cleanup stays retryable until absence is verified.

## Invalid reasons

${INVALID_REASONS.map((reason) => `- \`${reason}\`: ${INVALID_REASON_DESCRIPTIONS[reason]}`).join('\n')}

## Errors and retries

Every error body is \`{"error": "<code>", "message": "<text>"}\` (\`message\` optional). Retry only \`409
idempotency_request_in_progress\`, \`429 rate_limit_exceeded\`, \`429 temporarily_blocked\` and \`503\`, with the
same \`Idempotency-Key\`, honoring \`Retry-After\`, with bounded exponential backoff and jitter. Never retry 400, 401,
402, 403, \`customer_quota_exceeded\` or \`idempotency_key_reused\` without correcting the cause.
A country or platform failure returns no partial result and consumes no customer quota. Registry capacity, provider
balance, cost, credentials and raw provider errors are never exposed; such causes map to the country or platform errors.

## Choices this document makes where the service description leaves them open

- Too many inputs (v1 over ${LIMITS.v1MaxInputs}, v2 over ${LIMITS.v2MaxInputs}): \`413 payload_too_large\` (v1's message points to
  \`POST /v2/scrub\`). An input over ${LIMITS.maxPhoneLength} characters: \`400 validation_error\`.
  A character is a Unicode code point, as JSON Schema \`maxLength\` counts: an emoji is one character.
  A body that is not JSON, not UTF-8 (RFC 8259 §8.1), or sent with a \`Content-Encoding\` other than \`identity\` (the
  service reads uncompressed JSON only): \`400 validation_error\`. A request the HTTP layer cannot accept
  (a header block over 16 KiB, a control character in a header) is refused before any operation with \`400 validation_error\`
  and the headers of its path. Over ${LIMITS.maxBodyBytes} bytes (body, canonical input or result estimate): \`413 payload_too_large\`.
- Codes of the parenthesised errors: \`validation_error\` (400), \`subscription_inactive\` (402), \`account_suspended\`,
  \`activation_incomplete\`, \`country_not_in_plan\` (403), \`method_not_allowed\` (405, with \`Allow\`),
  \`payload_too_large\` (413), \`temporarily_blocked\` (429), \`internal_error\` (500).
- Unknown routes: \`404 {"error": "not_found"}\`. A \`job_id\` that is not a lowercase UUID: \`404 job_not_found\`.
- \`GET /v1/ready\`: \`200 {"ok": true}\` or \`503 {"ok": false, "error": "not_ready"}\`.
- Cancel \`POST /v2/scrub/{job_id}/cancel\`: \`200\` ScrubJobStatus when the job is (now or already) terminal; \`202\`
  ScrubJobStatus (still \`running\`, \`cancel_requested: true\`) when the cancel is accepted while an external registry call
  is reconciled; poll until \`cancelled\`.
- v2 responses carry \`Cache-Control: no-store\`; v1 responses \`Cache-Control: no-store, max-age=0\`.
- JobError carries \`country\` and optionally \`retry_after_seconds\` on country errors.

## Limits

| Item | Value |
|---|---|
| v1 max inputs | ${LIMITS.v1MaxInputs} |
| v2 max inputs | ${LIMITS.v2MaxInputs} |
| max length of one phone string | ${LIMITS.maxPhoneLength} characters |
| max body (v1, v2) | ${LIMITS.maxBodyBytes} bytes (25 MiB) |
| v1 execution budget | ${LIMITS.v1ExecutionBudgetSeconds} s |
| v2 admission budget | ${LIMITS.v2AdmissionBudgetSeconds} s |
| v2 active job hard cap | ${LIMITS.v2ActiveJobHardCapSeconds} s |
| technical rate limit | default ${LIMITS.defaultRateLimit} requests per ${LIMITS.rateLimitWindowSeconds}-second window per organization (override ${LIMITS.minRateLimit} to ${LIMITS.maxRateLimit}) |
| v1 idempotency retention | at least ${LIMITS.v1IdempotencyRetentionSeconds} s |
| v2 input TTL | ${LIMITS.v2InputTtlSeconds} s |
| v2 result TTL | ${LIMITS.v2ResultTtlSeconds} s from successful terminalization |
| v2 metadata TTL | ${LIMITS.v2MetadataTtlSeconds} s from terminalization |
| idempotency key | ${LIMITS.minIdempotencyKeyLength} to ${LIMITS.maxIdempotencyKeyLength} visible ASCII characters, no spaces |

Retention and TTL values are initial policy; a country or legal requirement may shorten them.

The v2 admission budget counts the service's work from the request's arrival, leaving out up to 45 s of the
time the body took to arrive (the whole request must arrive within 60 s). A longer upload shortens it; one
that leaves less than 0.5 s of it is answered 503 \`platform_failure\` (with \`Retry-After\` and a message)
before anything is admitted; so may one whose upload ends while the server instance it reached is shutting
down (a retry with the same Idempotency-Key reaches another). The v1 execution budget counts from the
request's arrival, upload included.

The service sends no webhooks and emits no events; job progress is observed only by polling.

${VERSIONING}`;
