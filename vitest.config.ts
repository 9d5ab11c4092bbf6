import { defineConfig } from 'vitest/config';

// Three layers, named so a reader knows what runs:
//   unit         pure logic, no I/O                               *.unit.test.ts
//   integration  real PostgreSQL, Redis, NATS (URLs from env)     *.int.test.ts
//   e2e          services as separate processes, real HTTP/gRPC   *.e2e.test.ts
// Integration suites share the real servers, each in its own database and NATS prefix, and run in
// parallel. Each e2e file starts a whole stack of processes, so `npm test` runs them one file at a
// time after the others (`--no-file-parallelism`): file parallelism is not a per-project option.
export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: 'unit',
          include: ['{packages,services,scripts}/*/test/**/*.unit.test.ts'],
          environment: 'node',
          // Property tests run thousands of cases; unit files share the cores with the integration
          // project in `npm test`, where 5 s (vitest's default) was missed at 7 s under load.
          testTimeout: 30_000,
        },
      },
      {
        test: {
          name: 'integration',
          include: ['{packages,services,scripts}/*/test/**/*.int.test.ts'],
          globalSetup: ['./test/global-setup.ts'],
          testTimeout: 60_000,
          hookTimeout: 60_000,
        },
      },
      {
        test: {
          name: 'e2e',
          include: ['test/e2e/**/*.e2e.test.ts', '{packages,services}/*/test/**/*.e2e.test.ts'],
          globalSetup: ['./test/global-setup.ts'],
          testTimeout: 120_000,
          hookTimeout: 120_000,
        },
      },
    ],
  },
});
