import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as devstack from '@dnc/devstack';
import { dropDatabase, type ProcessName, Stack, type StackOptions, uniqueSuffix } from '@dnc/devstack';

export const ROOT = path.resolve(fileURLToPath(new URL('../..', import.meta.url)));

export const TEST_DATABASE_URL = process.env['DATABASE_URL'] ?? 'postgres://postgres@127.0.0.1:5432/postgres';
export const TEST_REDIS_URL = process.env['REDIS_URL'] ?? 'redis://127.0.0.1:6379';
export const TEST_NATS_URL = process.env['NATS_URL'] ?? 'nats://127.0.0.1:4222';

/** The URL of a fresh database with a unique name on the test server. */
export function uniqueDatabaseUrl(label: string): string {
  const url = new URL(TEST_DATABASE_URL);
  url.pathname = `/dnc_${label}_${uniqueSuffix()}`;
  return url.toString();
}

export interface TestStack extends Stack {
  databaseUrl: string;
  natsPrefix: string;
  /** Stop every process and drop the database and NATS objects of this stack. */
  teardown(): Promise<void>;
}

export type TestStackOptions = Partial<Omit<StackOptions, 'root'>> & { label?: string };

/** Every service as its own process against the real servers, isolated by database and NATS prefix. */
export async function startTestStack(options: TestStackOptions = {}): Promise<TestStack> {
  const label = options.label ?? 'e2e';
  const databaseUrl = options.databaseUrl ?? uniqueDatabaseUrl(label);
  const natsPrefix = options.natsPrefix ?? `T${uniqueSuffix()}_`;
  const stack = await Stack.create({
    root: ROOT,
    redisUrl: TEST_REDIS_URL,
    natsUrl: TEST_NATS_URL,
    ...options,
    databaseUrl,
    natsPrefix,
    env: { DNC_REDIS_PREFIX: natsPrefix, ...options.env },
  });
  const test = Object.assign(stack, {
    databaseUrl,
    natsPrefix,
    async teardown() {
      await stack.close();
      await dropDatabase(databaseUrl).catch(() => {});
      await dropNatsPrefix(natsPrefix).catch(() => {});
    },
  });
  try {
    await stack.up();
  } catch (error) {
    await test.teardown();
    throw error;
  }
  return test;
}

export type { ProcessName };

export { dropDatabase };

/** Remove the stream and buckets of one NATS prefix on the test server. */
export const dropNatsPrefix = (prefix: string): Promise<void> =>
  devstack.dropNatsPrefix(TEST_NATS_URL, prefix);
