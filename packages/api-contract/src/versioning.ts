import { REGISTRY_SNAPSHOT_HEADER } from './limits.js';

/** Where the customer guides (docs/*.md of the repository) are published. */
export const DOCS_BASE = 'https://example.invalid/dnc-scrub/docs';

/** The Versioning section of the document's description: the terms of docs/deprecation.md in short. */
export const VERSIONING = `## Versioning

The version is in the path: \`/v1/\` and \`/v2/\` are both current. v1 is synchronous with zero retention; v2 is durable with
transient encrypted retention. Work that does not fit v1 is submitted to v2 with the same body and idempotency rules.

Deprecation and sunset terms are in a separate guide (\`docs/deprecation.md\`, linked as this document's external docs). In
short: within a version, request and response bodies, status codes and the error codes of an operation do not change
incompatibly, and response bodies gain no fields (new information comes in response headers); a version is deprecated at
least 12 months before its sunset, announced by email to account contacts and, on every response of that version, by the
\`Deprecation\` (RFC 9745) and \`Sunset\` (RFC 8594) headers with a \`Link\` to the guide; after the sunset date its routes
answer \`404 not_found\`. No version is deprecated today.

What each error code means and what to do about it: the troubleshooting guide (\`docs/troubleshooting.md\`).`;

/** The X-Registry-Snapshot-At response header of a result (v1 200, v2 result 200). */
export function registrySnapshotHeader(what: string) {
  return {
    [REGISTRY_SNAPSHOT_HEADER]: {
      description:
        `When the registry snapshot ${what} was taken (ISO 8601 UTC): evidence of how fresh the registry was. ` +
        'A country is never answered from a snapshot older than its maximum age (then 503 ' +
        '`country_service_temporarily_unavailable`). Absent only when no registry copy was read for the result (every ' +
        'input was invalid) or the registry did not say which copy it answered from.',
      required: false,
      schema: { type: 'string', format: 'date-time' },
    },
  };
}

/** X-Request-Id on every response: what to quote to support; every hop's logs carry it. */
export const requestIdHeader = {
  'X-Request-Id': {
    description:
      "Identifies this request in the service's logs: quote it to support. Your own X-Request-Id request header " +
      'is kept when it is 1 to 128 characters of letters, digits and `. _ : -` and looks like neither a phone ' +
      'number (ten digits or more in a row, separators between them counted as in a row; a UUID or a ULID is ' +
      'always kept) nor an API key; otherwise the service makes one, since every log line carries it.',
    required: true,
    schema: { type: 'string', pattern: '^[A-Za-z0-9._:-]{1,128}$' },
  },
};
