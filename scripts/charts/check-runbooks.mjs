#!/usr/bin/env node
// Every alert of charts/dnc-scrub/files/alerts.rules.yaml has a runbook_url annotation naming
// docs/runbooks/<alert>.md; that page exists and has the three sections every runbook has (what it
// means, how to confirm, what to do); and every page of docs/runbooks/ belongs to an alert.
// Prints `N alerts, N runbooks` and exits non-zero listing each problem.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const rules = readFileSync(join(root, 'charts/dnc-scrub/files/alerts.rules.yaml'), 'utf8');
const SECTIONS = ['## What it means', '## How to confirm', '## What to do'];

const problems = [];
const alerts = [];
// One rule = from its `- alert:` line to the next one (or the end of the file).
const blocks = rules.split(/^\s*- alert: /m).slice(1);
for (const block of blocks) {
  const name = block.split(/\s/, 1)[0];
  alerts.push(name);
  const url = /^\s*runbook_url:\s*(\S+)\s*$/m.exec(block)?.[1];
  const expected = `docs/runbooks/${name}.md`;
  if (url !== expected) {
    problems.push(`${name}: runbook_url is ${url ?? 'missing'}, expected ${expected}`);
    continue;
  }
  const page = join(root, url);
  if (!existsSync(page)) {
    problems.push(`${name}: ${url} does not exist`);
    continue;
  }
  const text = readFileSync(page, 'utf8');
  if (!text.startsWith(`# ${name}\n`)) problems.push(`${url}: must start with "# ${name}"`);
  for (const section of SECTIONS) {
    if (!text.includes(`\n${section}\n`)) problems.push(`${url}: no "${section}" section`);
  }
}
const pages = readdirSync(join(root, 'docs/runbooks')).filter((f) => f.endsWith('.md') && f !== 'README.md');
for (const page of pages) {
  if (!alerts.includes(page.slice(0, -3))) problems.push(`docs/runbooks/${page}: no alert of that name`);
}
const index = readFileSync(join(root, 'docs/runbooks/README.md'), 'utf8');
for (const name of alerts) {
  if (!index.includes(`[${name}](${name}.md)`))
    problems.push(`docs/runbooks/README.md: ${name} is not listed`);
}
if (problems.length > 0) {
  for (const p of problems) console.log(p);
  process.exit(1);
}
console.log(`${alerts.length} alerts, ${pages.length} runbooks, all linked`);
