import {
  ABSENT_HEADERS_EXTENSION,
  ERROR_CODES,
  isErrorCode,
  type JsonObject,
  type OpenApiDocument,
} from '@dnc/api-contract';
import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';

// ajv-formats is CommonJS with `exports.default`; under NodeNext the default import is the module object.
const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ??
  addFormatsModule) as unknown as (ajv: Ajv2020) => Ajv2020;

export type HeaderBag = Headers | Record<string, string | string[] | number | undefined>;

/** One HTTP response as the test received it. */
export interface ReceivedResponse {
  method: string;
  /** Route template (`/v2/scrub/{job_id}`) or the concrete path (`/v2/scrub/0b3f...`); a query string is ignored. */
  route: string;
  status: number;
  headers: HeaderBag;
  /** Parsed JSON body; undefined when the response had no body. */
  body?: unknown;
}

export interface ResponseValidator {
  /** Problems found, as readable sentences; empty when the response is documented. */
  check(response: ReceivedResponse): string[];
  /** Throws an Error listing every problem when the response is not documented. */
  assert(response: ReceivedResponse): void;
  /** Reads a fetch Response (consumes its body), asserts it, and returns the parsed JSON body. */
  assertFetchResponse(method: string, route: string, response: Response): Promise<unknown>;
}

interface HeaderObject {
  required?: boolean;
  schema?: JsonObject;
}

interface CompiledResponse {
  headers: Record<string, { required: boolean; validate: ValidateFunction; type: unknown }>;
  absentHeaders: string[];
  body?: { validate: ValidateFunction; schemaName?: string };
}

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];
const SCHEMA_ID = 'urn:dnc:schema:';

/** `#/components/schemas/X` -> an id ajv knows, so each schema compiles on its own. */
function rewriteRefs(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(rewriteRefs);
  if (value === null || typeof value !== 'object') return value;
  const out: JsonObject = {};
  for (const [key, item] of Object.entries(value)) {
    if (key === '$ref' && typeof item === 'string' && item.startsWith('#/components/schemas/')) {
      out[key] = SCHEMA_ID + item.slice('#/components/schemas/'.length);
    } else if (key !== 'example' && key !== 'examples') {
      out[key] = rewriteRefs(item);
    }
  }
  return out;
}

function resolve<T>(document: OpenApiDocument, value: unknown): T {
  let current = value as JsonObject;
  for (let depth = 0; depth < 10 && typeof current?.['$ref'] === 'string'; depth++) {
    const pointer = (current['$ref'] as string).replace(/^#\//, '').split('/');
    let target: unknown = document;
    for (const part of pointer) target = (target as JsonObject)[part.replace(/~1/g, '/').replace(/~0/g, '~')];
    current = target as JsonObject;
  }
  return current as T;
}

function headerValue(headers: HeaderBag, name: string): string | undefined {
  if (typeof (headers as Headers).get === 'function') return (headers as Headers).get(name) ?? undefined;
  const lower = name.toLowerCase();
  for (const [key, value] of Object.entries(headers as Record<string, unknown>)) {
    if (key.toLowerCase() !== lower || value === undefined) continue;
    return Array.isArray(value) ? value.join(', ') : String(value);
  }
  return undefined;
}

function coerceHeader(raw: string, type: unknown): unknown {
  if ((type === 'integer' || type === 'number') && /^-?\d+(\.\d+)?$/.test(raw.trim()))
    return Number(raw.trim());
  if (type === 'boolean' && (raw === 'true' || raw === 'false')) return raw === 'true';
  return raw;
}

function describeErrors(where: string, errors: ErrorObject[] | null | undefined): string[] {
  return (errors ?? []).map((error) => {
    const path = `${where}${error.instancePath.replace(/\//g, '.')}`;
    // Name the offending property but never echo values: bodies may hold phone numbers.
    if (error.keyword === 'additionalProperties') {
      return `${path}: undocumented field '${String(error.params['additionalProperty'])}'`;
    }
    if (error.keyword === 'enum') {
      return `${path}: must be one of ${JSON.stringify(error.params['allowedValues'])}`;
    }
    return `${path}: ${error.message ?? error.keyword}`;
  });
}

function templateToRegExp(template: string): RegExp {
  const source = template
    .split(/\{[^}]+\}/)
    .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
    .join('[^/]+');
  return new RegExp(`^${source}$`);
}

export function createResponseValidator(document: OpenApiDocument): ResponseValidator {
  const ajv = new Ajv2020({ allErrors: true, strict: false, validateFormats: true });
  addFormats(ajv);
  for (const [name, schema] of Object.entries(document.components.schemas)) {
    ajv.addSchema(rewriteRefs(schema) as JsonObject, SCHEMA_ID + name);
  }

  const compiled = new Map<string, CompiledResponse>();
  const compile = (key: string, responseRef: unknown): CompiledResponse => {
    let entry = compiled.get(key);
    if (!entry) {
      entry = compileResponse(ajv, document, responseRef);
      compiled.set(key, entry);
    }
    return entry;
  };

  const templates = Object.keys(document.paths).map((template) => ({
    template,
    pattern: templateToRegExp(template),
  }));
  const findTemplate = (route: string): string | undefined => {
    const path = route.split('?')[0] ?? route;
    if (document.paths[path]) return path;
    return templates.find((entry) => entry.pattern.test(path))?.template;
  };

  const check = (received: ReceivedResponse): string[] => {
    const method = received.method.toLowerCase();
    const label = `${received.method.toUpperCase()} ${received.route} -> ${received.status}`;
    const problems: string[] = [];
    const template = findTemplate(received.route);

    if (!template) return unknownRouteProblems(received).map((problem) => `${label}: ${problem}`);

    const pathItem = document.paths[template] as Record<string, JsonObject | undefined>;
    let operation = pathItem[method];
    if (!operation || !METHODS.includes(method)) {
      // A method the path does not support: only the documented 405 of the path applies.
      if (received.status !== 405) {
        problems.push(`method not supported on ${template}; expected 405 method_not_allowed`);
        return problems.map((problem) => `${label}: ${problem}`);
      }
      operation = METHODS.map((m) => pathItem[m]).find((op) => op !== undefined);
      if (!operation) return [`${label}: path ${template} has no operations`];
    }
    const operationMethod = METHODS.find((m) => pathItem[m] === operation) ?? method;
    const responses = operation['responses'] as JsonObject;
    const responseRef = responses[String(received.status)];
    if (!responseRef) {
      return [
        `${label}: undocumented status ${received.status} (documented: ${Object.keys(responses).join(', ')})`,
      ];
    }
    const response = compile(`${operationMethod} ${template} ${received.status}`, responseRef);

    problems.push(...headerProblems(response, received), ...bodyProblems(response, received));
    return problems.map((problem) => `${label}: ${problem}`);
  };

  const assert = (received: ReceivedResponse): void => {
    const problems = check(received);
    if (problems.length > 0) {
      throw new Error(`Response does not match the OpenAPI document:\n  ${problems.join('\n  ')}`);
    }
  };
  return {
    check,
    assert,
    async assertFetchResponse(method, route, response) {
      const body = await fetchedBody(method, route, response);
      assert({ method, route, status: response.status, headers: response.headers, body });
      return body;
    },
  };
}

/** A route the document does not name: the one documented answer is 404 not_found. */
function unknownRouteProblems(received: ReceivedResponse): string[] {
  const problems: string[] = [];
  if (received.status !== 404)
    problems.push(`unknown route answered ${received.status}, expected 404 not_found`);
  const body = received.body as JsonObject | undefined;
  if (
    body?.['error'] !== 'not_found' ||
    Object.keys(body).some((key) => key !== 'error' && key !== 'message')
  ) {
    problems.push(`unknown route body must be {"error":"not_found"}`);
  }
  return problems;
}

/** Read a fetch Response's body and check it with the rest of the answer. */
async function fetchedBody(method: string, route: string, response: Response): Promise<unknown> {
  const text = await response.text();
  if (text === '') return undefined;
  try {
    return JSON.parse(text);
  } catch {
    throw new Error(`${method.toUpperCase()} ${route} -> ${response.status}: the body is not JSON`);
  }
}

function compileResponse(ajv: Ajv2020, document: OpenApiDocument, responseRef: unknown): CompiledResponse {
  const response = resolve<JsonObject>(document, responseRef);
  const headers: CompiledResponse['headers'] = {};
  for (const [name, headerRef] of Object.entries((response['headers'] ?? {}) as JsonObject)) {
    const header = resolve<HeaderObject>(document, headerRef);
    const schema = (header.schema ?? {}) as JsonObject;
    headers[name] = {
      required: header.required === true,
      validate: ajv.compile(rewriteRefs(schema) as JsonObject),
      type: schema['type'],
    };
  }
  const entry: CompiledResponse = {
    headers,
    absentHeaders: (response[ABSENT_HEADERS_EXTENSION] as string[] | undefined) ?? [],
  };
  const media = (response['content'] as JsonObject | undefined)?.['application/json'] as
    | JsonObject
    | undefined;
  if (media?.['schema']) {
    const schema = media['schema'] as JsonObject;
    const schemaRef = typeof schema['$ref'] === 'string' ? schema['$ref'] : undefined;
    const body: NonNullable<CompiledResponse['body']> = {
      validate: ajv.compile(rewriteRefs(schema) as JsonObject),
    };
    if (schemaRef) body.schemaName = schemaRef.slice(schemaRef.lastIndexOf('/') + 1);
    entry.body = body;
  }
  return entry;
}

/** The documented headers present and valid, the ones that must be absent absent. */
function headerProblems(response: CompiledResponse, received: ReceivedResponse): string[] {
  const problems: string[] = [];
  for (const [name, header] of Object.entries(response.headers)) {
    const raw = headerValue(received.headers, name);
    if (raw === undefined) {
      if (header.required) problems.push(`missing header ${name}`);
      continue;
    }
    if (!header.validate(coerceHeader(raw, header.type))) {
      problems.push(...describeErrors(`header ${name}`, header.validate.errors));
    }
  }
  for (const name of response.absentHeaders) {
    if (headerValue(received.headers, name) !== undefined)
      problems.push(`header ${name} must not be present`);
  }
  return problems;
}

/** The JSON body as documented (schema, then the rules a schema cannot state), or no body. */
function bodyProblems(response: CompiledResponse, received: ReceivedResponse): string[] {
  const problems: string[] = [];
  if (response.body) {
    if (received.body === undefined) {
      problems.push('missing JSON body');
    } else {
      const contentType = headerValue(received.headers, 'content-type');
      if (contentType !== undefined && !contentType.toLowerCase().startsWith('application/json')) {
        problems.push(`content-type ${contentType} is not application/json`);
      }
      if (!response.body.validate(received.body)) {
        problems.push(...describeErrors('body', response.body.validate.errors));
      } else {
        problems.push(...semanticProblems(response.body.schemaName, received));
      }
    }
  } else if (received.body !== undefined && received.body !== '') {
    problems.push('undocumented body');
  }
  return problems;
}

/** Rules of the service description that a JSON Schema cannot state. */
function semanticProblems(schemaName: string | undefined, received: ReceivedResponse): string[] {
  const body = received.body as JsonObject;
  const problems: string[] = [];
  const code = body['error'];
  if (schemaName === undefined && isErrorCode(code)) {
    const rule = ERROR_CODES[code].retryAfter;
    const retryAfter = headerValue(received.headers, 'Retry-After');
    if (rule === 'required' && retryAfter === undefined)
      problems.push(`${code} requires a Retry-After header`);
    if (rule === 'absent' && retryAfter !== undefined) problems.push(`${code} must not carry Retry-After`);
  }
  if (schemaName === 'ScrubResult') {
    const summary = body['summary'] as Record<string, number>;
    const prohibited = (body['prohibited_numbers_to_call'] as unknown[]).length;
    const safe = (body['safe_numbers_to_call'] as unknown[]).length;
    const invalid = (body['invalid_numbers'] as unknown[]).length;
    if (summary['prohibited_numbers'] !== prohibited)
      problems.push('summary.prohibited_numbers differs from the array');
    if (summary['safe_numbers'] !== safe) problems.push('summary.safe_numbers differs from the array');
    if (summary['invalid_numbers'] !== invalid)
      problems.push('summary.invalid_numbers differs from the array');
    if (summary['total_checked'] !== prohibited + safe + invalid) {
      problems.push('summary.total_checked is not prohibited + safe + invalid');
    }
  }
  if (schemaName === 'ScrubJobStatus' || schemaName === 'ScrubJobAccepted') {
    const status = body['status'];
    const hasError = body['error'] !== undefined;
    if ((status === 'failed' || status === 'expired') && !hasError)
      problems.push(`a ${status} job must carry error`);
    if (status !== 'failed' && status !== 'expired' && hasError)
      problems.push(`a ${String(status)} job must not carry error`);
    const jobError = hasError ? (body['error'] as JsonObject) : undefined;
    if (status === 'expired' && jobError && jobError['error'] !== 'job_expired') {
      problems.push('an expired job carries error job_expired');
    }
    if (String(jobError?.['error']).startsWith('country_service_') && jobError?.['country'] === undefined) {
      problems.push('a country JobError must carry its country');
    }
    const jobId = String(body['job_id']);
    const urls: [string, string][] = [
      ['status_url', `/v2/scrub/${jobId}`],
      ['result_url', `/v2/scrub/${jobId}/result`],
      ['cancel_url', `/v2/scrub/${jobId}/cancel`],
    ];
    for (const [field, suffix] of urls) {
      if (!String(body[field]).endsWith(suffix)) problems.push(`${field} must end with ${suffix}`);
    }
  }
  return problems;
}
