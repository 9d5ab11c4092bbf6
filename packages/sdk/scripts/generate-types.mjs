#!/usr/bin/env node
// Generates, from @dnc/api-contract (the one source of the public contract):
//   src/gen/openapi.ts   types of packages/api-contract/openapi.json (openapi-typescript);
//   src/gen/contract.ts  the contract's constants the SDK and CLI need at run time (error codes with
//                        their status and retry rule, countries, limits, reasons), so the published
//                        package has no runtime dependency on the private contract package.
// `--check` writes nothing and fails when a committed file is stale. Run after `npx tsc -b`.
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import openapiTS, { astToString } from 'openapi-typescript';

const packageDir = join(dirname(fileURLToPath(import.meta.url)), '..');
const contractDir = join(packageDir, '..', 'api-contract');
const source = join(contractDir, 'openapi.json');
const biome = join(packageDir, '..', '..', 'node_modules', '.bin', 'biome');
const contract = await import(pathToFileURL(join(contractDir, 'dist', 'index.js')).href);

function format(target, text) {
  const formatted = spawnSync(biome, ['format', `--stdin-file-path=${target}`], {
    input: text,
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  });
  if (formatted.status !== 0) {
    process.stderr.write(formatted.stderr);
    process.exit(1);
  }
  return formatted.stdout;
}

const header = (what) =>
  `// biome-ignore-all lint: generated ${what}\n` +
  '// Do not edit: run `npm run types:generate -w @dnc-scrub/sdk`.\n\n';

function typesFile() {
  return openapiTS(pathToFileURL(source)).then((ast) =>
    format(
      join(packageDir, 'src', 'gen', 'openapi.ts'),
      header('by openapi-typescript from packages/api-contract/openapi.json') + astToString(ast),
    ),
  );
}

function constantsFile() {
  const errorCodes = Object.fromEntries(
    Object.entries(contract.ERROR_CODES).map(([code, info]) => [
      code,
      { status: info.status, retryable: info.retryable },
    ]),
  );
  const constant = (name, value, doc) =>
    `/** ${doc} */\nexport const ${name} = ${JSON.stringify(value, null, 2)} as const;\n\n`;
  const body =
    constant(
      'API_VERSION',
      contract.API_VERSION,
      'Version of the OpenAPI document this SDK was built from.',
    ) +
    constant(
      'ERROR_CODES',
      errorCodes,
      'Every public error code with its HTTP status and whether a client may retry it automatically.',
    ) +
    constant('COUNTRY_CODES', contract.COUNTRY_CODES, 'Country codes accepted by the request schema.') +
    constant(
      'LIVE_COUNTRIES',
      contract.LIVE_COUNTRIES,
      'The sellable and operational catalog; the other codes are technical only.',
    ) +
    constant('LIMITS', contract.LIMITS, 'Every documented limit of the public API.') +
    constant(
      'IDEMPOTENCY_KEY_PATTERN',
      contract.IDEMPOTENCY_KEY_PATTERN,
      'An Idempotency-Key: 1 to 255 visible ASCII characters, no spaces.',
    ) +
    constant('INVALID_REASONS', contract.INVALID_REASONS, 'The `reason` vocabulary of an invalid input.') +
    constant('JOB_ERROR_CODES', contract.JOB_ERROR_CODES, 'Closed vocabulary of `JobError.error`.') +
    constant('TERMINAL_JOB_STATUSES', contract.TERMINAL_JOB_STATUSES, 'Job states that never change again.');
  return format(
    join(packageDir, 'src', 'gen', 'contract.ts'),
    header('from the constants of @dnc/api-contract') + body,
  );
}

const outputs = [
  [join(packageDir, 'src', 'gen', 'openapi.ts'), await typesFile()],
  [join(packageDir, 'src', 'gen', 'contract.ts'), constantsFile()],
];

let stale = false;
for (const [target, next] of outputs) {
  const name = target.slice(packageDir.length + 1);
  if (process.argv.includes('--check')) {
    let current = '';
    try {
      current = readFileSync(target, 'utf8');
    } catch {}
    if (current !== next) {
      process.stderr.write(
        `packages/sdk/${name} is stale: run \`npm run types:generate -w @dnc-scrub/sdk\`\n`,
      );
      stale = true;
    } else process.stdout.write(`${name} is up to date\n`);
  } else {
    writeFileSync(target, next);
    process.stdout.write(`wrote ${target}\n`);
  }
}
if (stale) process.exit(1);
