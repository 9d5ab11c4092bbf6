#!/usr/bin/env node
// The package registry reachable from this workplace serves only the linux platform builds of packages
// that ship native binaries as optional dependencies (@biomejs/cli-*, @bufbuild/buf-*, @rollup/rollup-*,
// @esbuild/*). npm then leaves the other platforms out of package-lock.json, and `npm ci` refuses the
// lock as out of sync. This adds the missing entries (version from the parent's optionalDependencies,
// os/cpu/libc read from the package name) so that `npm ci` accepts the lock and skips them by platform,
// as it would with a lock written against the full registry. Run after any `npm install`:
//   node scripts/lockfile/complete-platforms.mjs          (writes)
//   node scripts/lockfile/complete-platforms.mjs --check  (exit 1 when entries are missing)
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const lockPath = fileURLToPath(new URL('../../package-lock.json', import.meta.url));
const lock = JSON.parse(readFileSync(lockPath, 'utf8'));
const packages = lock.packages;

const OS = [
  'android',
  'darwin',
  'linux',
  'win32',
  'freebsd',
  'openbsd',
  'netbsd',
  'sunos',
  'aix',
  'openharmony',
];
const CPU = {
  x64: 'x64',
  arm64: 'arm64',
  ia32: 'ia32',
  arm: 'arm',
  armv7: 'arm',
  loong64: 'loong64',
  ppc64: 'ppc64',
  riscv64: 'riscv64',
  s390x: 's390x',
  mips64el: 'mips64el',
};

/** os, cpu and libc of a platform package, from its name (`cli-linux-arm64-musl`, `rollup-win32-x64-msvc`). */
function platformOf(name) {
  const parts = name.split('/').pop().split('-');
  const os = parts.find((p) => OS.includes(p));
  const cpuPart = parts.find((p) => p in CPU);
  if (!os || !cpuPart) return undefined;
  const libc =
    os === 'linux' ? (parts.includes('musl') || parts.includes('musleabihf') ? 'musl' : 'glibc') : undefined;
  return { os, cpu: CPU[cpuPart], libc };
}

const missing = [];
for (const [path, entry] of Object.entries(packages)) {
  for (const [dep, version] of Object.entries(entry.optionalDependencies ?? {})) {
    const base = path === '' ? '' : `${path}/`;
    // Resolution: next to the parent, else hoisted to the root.
    const candidates = [`${base}node_modules/${dep}`, `node_modules/${dep}`];
    if (candidates.some((c) => packages[c])) continue;
    const platform = platformOf(dep);
    if (!platform) continue;
    const target = `node_modules/${dep}`;
    const added = {
      version,
      cpu: [platform.cpu],
      ...(entry.dev ? { dev: true } : {}),
      ...(platform.libc ? { libc: [platform.libc] } : {}),
      optional: true,
      os: [platform.os],
    };
    if (entry.peer) added.peer = true;
    missing.push([target, added]);
  }
}

if (process.argv.includes('--check')) {
  if (missing.length) {
    process.stderr.write(
      `package-lock.json lacks ${missing.length} platform entries; run node scripts/lockfile/complete-platforms.mjs\n`,
    );
    process.exit(1);
  }
  process.exit(0);
}
for (const [target, added] of missing) packages[target] = added;
lock.packages = Object.fromEntries(
  Object.entries(packages).sort(([a], [b]) => (a === '' ? -1 : b === '' ? 1 : a.localeCompare(b))),
);
writeFileSync(lockPath, `${JSON.stringify(lock, null, 2)}\n`);
process.stdout.write(`added ${missing.length} platform entries to package-lock.json\n`);
