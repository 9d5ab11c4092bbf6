#!/usr/bin/env node
// The NATS users of the platform, for the official NATS chart's values (deploy/*/nats-values.yaml):
// one user per identity that uses NATS, with exactly the subject permissions of
// packages/kit/src/security/nats-permissions.ts (the same the local stack's nats-server gets), and
// its password from an environment variable fed by a Secret. The blocks between the markers are
// generated; `--check` fails when a values file is out of step with the code (CI, chart checks).
//
//   node scripts/charts/nats-authorization.mjs [--check]
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { NATS_PROVISIONER, natsPermissions } from '@dnc/kit';

const FILES = ['deploy/production/nats-values.yaml', 'deploy/local/nats-values.yaml'];
const COUNTRIES = ['mx', 'ar', 'co'];
const USERS = [
  NATS_PROVISIONER,
  'admission',
  'job-scheduler',
  'job-worker',
  ...COUNTRIES.map((c) => `registry-adapter-${c}`),
];
/** The Secret in the NATS namespace holding the passwords (the same values as the platform's Secret). */
const SECRET = 'dnc-nats-users';

export const passwordVariable = (user) => `NATS_PASSWORD_${user.toUpperCase().replace(/-/g, '_')}`;
const list = (indent, items) => items.map((s) => `${indent}- ${JSON.stringify(s)}`);

function usersBlock() {
  const lines = ['  merge:', '    authorization:', '      users:'];
  for (const user of USERS) {
    const p = natsPermissions(user);
    lines.push(
      `        - user: ${user}`,
      `          password: << $${passwordVariable(user)} >>`,
      '          permissions:',
      '            publish:',
      '              allow:',
      ...list('                ', p.publish),
      '            subscribe:',
      '              allow:',
      ...list('                ', p.subscribe),
    );
  }
  return lines;
}

function envBlock() {
  const lines = ['container:', '  env:'];
  for (const user of USERS) {
    const v = passwordVariable(user);
    lines.push(
      `    ${v}:`,
      '      valueFrom:',
      '        secretKeyRef:',
      `          name: ${SECRET}`,
      `          key: ${v}`,
    );
  }
  return lines;
}

function replaceBlock(text, name, body) {
  const begin = `# BEGIN generated ${name}: node scripts/charts/nats-authorization.mjs`;
  const end = `# END generated ${name}`;
  const re = new RegExp(`( *)${begin.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\n[\\s\\S]*?\\1${end}`);
  const m = re.exec(text);
  if (!m) throw new Error(`no "${begin}" ... "${end}" block`);
  const indent = m[1];
  return text.replace(re, [`${indent}${begin}`, ...body, `${indent}${end}`].join('\n'));
}

const root = fileURLToPath(new URL('../..', import.meta.url));
const check = process.argv.includes('--check');
let stale = 0;
for (const file of FILES) {
  const path = `${root}${file}`;
  const text = readFileSync(path, 'utf8');
  const next = replaceBlock(replaceBlock(text, 'nats-users', usersBlock()), 'nats-passwords', envBlock());
  if (next === text) continue;
  if (check) {
    stale++;
    process.stderr.write(
      `${file}: NATS users out of step with nats-permissions.ts; run node scripts/charts/nats-authorization.mjs\n`,
    );
  } else {
    writeFileSync(path, next);
    process.stdout.write(`wrote ${file}\n`);
  }
}
process.exit(stale ? 1 : 0);
