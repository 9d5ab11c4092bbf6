import { defineConfig } from 'vitest/config';

// Three layers, named so a reader knows what runs:
//   unit         pure logic, no I/O                               *.unit.test.ts
//   integration  real PostgreSQL, Redis, NATS (URLs from env)     *.int.test.ts
//   e2e          services as separate processes, real HTTP/gRPC   *.e2e.test.ts
export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: 'unit',
          include: ['{packages,services,scripts}/*/test/**/*.unit.test.ts'],
          environment: 'node',
        },
      },
      {
        test: {
          name: 'integration',
          include: ['{packages,services,scripts}/*/test/**/*.int.test.ts'],
          globalSetup: ['./test/global-setup.ts'],
          testTimeout: 60_000,
          hookTimeout: 60_000,
          // Suites share the real servers; each one uses its own database and NATS prefix.
          fileParallelism: true,
        },
      },
      {
        test: {
          name: 'e2e',
          include: ['test/e2e/**/*.e2e.test.ts', '{packages,services}/*/test/**/*.e2e.test.ts'],
          globalSetup: ['./test/global-setup.ts'],
          testTimeout: 120_000,
          hookTimeout: 120_000,
          // Each e2e file starts its own stack of processes; two cores run them one at a time.
          fileParallelism: false,
        },
      },
    ],
  },
});
