#!/usr/bin/env node
// One entry for every role, used by the container image and the local stack:
//   node scripts/run.js gateway|admission|quota|job-scheduler|job-worker|registry-adapter|dashboard|migrate
const roles = {
  gateway: '../services/gateway/dist/main.js',
  admission: '../services/admission/dist/main.js',
  quota: '../services/quota/dist/main.js',
  'job-scheduler': '../services/job-scheduler/dist/main.js',
  'job-worker': '../services/job-scheduler/dist/main.js',
  'registry-adapter': '../services/registry-adapter/dist/main.js',
  dashboard: '../services/dashboard/dist/main.js',
  migrate: './migrate.js',
};

const role = process.argv[2];
if (!role || !(role in roles)) {
  process.stderr.write(`usage: node scripts/run.js <${Object.keys(roles).join('|')}>\n`);
  process.exit(2);
}
if (role === 'job-worker') process.env.DNC_ROLE = 'worker';
if (role === 'job-scheduler' && !process.env.DNC_ROLE) process.env.DNC_ROLE = 'api';
const mod = await import(new URL(roles[role], import.meta.url).href);
const { runMain } = await import('@dnc/kit');
await runMain(role, () => mod.main());
