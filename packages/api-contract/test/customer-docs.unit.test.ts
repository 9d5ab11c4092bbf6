import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  buildOpenApiDocument,
  CODE_SAMPLES,
  ERROR_CODE_NAMES,
  ERROR_CODES,
  JOB_ERROR_CODES,
  type OperationId,
} from '../src/index.js';

const ROOT = new URL('../../../', import.meta.url);
const read = (path: string) => readFileSync(new URL(path, ROOT), 'utf8');

// Issue 19, item 6: the troubleshooting page covers every error code, the deprecation guide the spec and the
// document point to exists, and every operation has working examples in curl, Node (SDK) and Python.
describe('customer docs', () => {
  it('docs/troubleshooting.md explains every public error code (meaning and what to do) and every JobError code', () => {
    const page = read('docs/troubleshooting.md');
    for (const code of ERROR_CODE_NAMES) {
      const heading = `### \`${code}\` (${ERROR_CODES[code].status})`;
      expect(page, heading).toContain(heading);
      const section = page.slice(page.indexOf(heading)).split('\n### ')[0] as string;
      expect(section, code).toMatch(/\*\*Means:\*\*/);
      expect(section, code).toMatch(/\*\*Do:\*\*/);
    }
    for (const code of JOB_ERROR_CODES) expect(page).toMatch(new RegExp(`\\| \`${code}\` +\\|`));
  });

  it('the OpenAPI document links the deprecation guide, which exists and states the terms', () => {
    const doc = buildOpenApiDocument() as unknown as {
      externalDocs?: { url: string };
      info: { description: string };
    };
    expect(doc.externalDocs?.url).toMatch(/\/deprecation\.md$/);
    expect(doc.info.description).toContain('docs/deprecation.md');
    const guide = read('docs/deprecation.md');
    for (const term of ['Deprecation:', 'Sunset:', '12 months', 'response bodies gain\n  no fields']) {
      expect(guide).toContain(term);
    }
  });

  it('every operation has x-codeSamples in curl, Node (SDK) and Python (requests), also in its description', () => {
    const doc = buildOpenApiDocument();
    const operations = Object.values(doc.paths).flatMap((item) =>
      Object.values(item).filter(
        (op): op is Record<string, unknown> => typeof op === 'object' && op !== null && 'operationId' in op,
      ),
    );
    expect(operations).toHaveLength(Object.keys(CODE_SAMPLES).length);
    for (const op of operations) {
      const samples = op['x-codeSamples'] as { label: string; source: string }[];
      expect(
        samples.map((s) => s.label),
        String(op['operationId']),
      ).toEqual(['curl', 'Node (SDK)', 'Python (requests)']);
      for (const s of samples) expect(op['description']).toContain(s.source);
    }
  });

  it('the samples are valid code: JavaScript modules check with node, Python parses, curl names the route', () => {
    const dir = mkdtempSync(join(tmpdir(), 'dnc-samples-'));
    try {
      for (const [operation, samples] of Object.entries(CODE_SAMPLES) as [
        OperationId,
        (typeof CODE_SAMPLES)[OperationId],
      ][]) {
        for (const sample of samples) {
          if (sample.lang === 'JavaScript') {
            const file = join(dir, `${operation}.mjs`);
            writeFileSync(file, sample.source);
            execFileSync(process.execPath, ['--check', file]);
          } else if (sample.lang === 'Python') {
            execFileSync('python3', ['-c', 'import ast, sys; ast.parse(sys.stdin.read())'], {
              input: sample.source,
            });
          } else {
            expect(sample.source).toMatch(/^curl /);
            expect(sample.source).toContain('$DNC_BASE_URL/v');
          }
        }
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    expect(existsSync(new URL('packages/sdk/package.json', ROOT))).toBe(true);
    expect(JSON.parse(read('packages/sdk/package.json')).name).toBe('@dnc-scrub/sdk');
  }, 60_000);
});
