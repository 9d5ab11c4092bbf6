#!/usr/bin/env node
// Executable entry of `dnc-admin` (committed with its mode, unlike compiled output). The root `prepare`
// script builds dist/ during `npm ci`, so `npx dnc-admin` works right after install.
try {
  await import('../dist/main.js');
} catch (error) {
  if (error?.code === 'ERR_MODULE_NOT_FOUND' && String(error.message).includes('dist/main.js')) {
    process.stderr.write('dnc-admin: not built yet; run `npm run build` at the repository root\n');
    process.exit(1);
  }
  throw error;
}
