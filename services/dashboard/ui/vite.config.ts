import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

// The dashboard's front end, built once (`npm run build`) into dist/ui and served by the backend itself:
// no CDN, no inline script or style (the Content-Security-Policy forbids them), hashed asset names.
// JSX is compiled by Vite's own transform (React's automatic runtime); no plugin is needed for a
// production build.
export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  base: '/',
  publicDir: 'public',
  esbuild: { jsx: 'automatic' },
  build: {
    outDir: fileURLToPath(new URL('../dist/ui', import.meta.url)),
    emptyOutDir: true,
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
    sourcemap: false,
    target: 'es2022',
  },
});
