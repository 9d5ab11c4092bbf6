#!/usr/bin/env node
// Writes openapi.json from buildOpenApiDocument() (run after `npx tsc -b`).
// `--check` writes nothing and fails when the committed file is stale.
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildOpenApiDocument } from '../dist/index.js';

const packageDir = join(dirname(fileURLToPath(import.meta.url)), '..');
const target = join(packageDir, 'openapi.json');
const biome = join(packageDir, '..', '..', 'node_modules', '.bin', 'biome');

// Format with the repository's formatter so `biome check` stays clean on the generated file.
const formatted = spawnSync(biome, ['format', `--stdin-file-path=${target}`], {
  input: `${JSON.stringify(buildOpenApiDocument(), null, 2)}\n`,
  encoding: 'utf8',
  maxBuffer: 64 * 1024 * 1024,
});
if (formatted.status !== 0) {
  process.stderr.write(formatted.stderr);
  process.exit(1);
}
const next = formatted.stdout;

if (process.argv.includes('--check')) {
  let current = '';
  try {
    current = readFileSync(target, 'utf8');
  } catch {}
  if (current !== next) {
    process.stderr.write(
      'packages/api-contract/openapi.json is stale: run `npx tsc -b && npm run openapi:generate -w @dnc/api-contract`\n',
    );
    process.exit(1);
  }
  process.stdout.write('openapi.json is up to date\n');
} else {
  writeFileSync(target, next);
  process.stdout.write(`wrote ${target}\n`);
}
