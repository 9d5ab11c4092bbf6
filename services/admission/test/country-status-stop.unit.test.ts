import type { Logger } from '@dnc/kit';
import { describe, expect, it } from 'vitest';
import { CountryStatusPublisher } from '../src/country-status.js';

const silent = { warn() {}, info() {}, error() {}, debug() {} } as unknown as Logger;
const COUNTRIES = ['mx', 'ar', 'co', 'es', 'au', 'sg'];

// Found by a review (2026-12-05, left open then): with NATS unreachable every write of a republish pass
// waits its 2 s timeout, and admission's shutdown waited for the whole pass, six countries, about 12 s
// of a termination grace period. A stop now ends the pass after the write in progress.
describe('CountryStatusPublisher.stop', () => {
  it('while NATS does not answer, a stop waits for the write in progress only, not the pass', async () => {
    const WRITE_MS = 300;
    const writes: string[] = [];
    const publisher = new CountryStatusPublisher(
      {
        kv: {
          put: (key: string) => {
            writes.push(key);
            return new Promise((_, reject) => setTimeout(() => reject(new Error('TIMEOUT')), WRITE_MS));
          },
        },
        read: async () => undefined,
        countries: COUNTRIES,
        logger: silent,
      },
      60_000,
    );
    publisher.start();
    await new Promise((r) => setTimeout(r, 50));
    const started = Date.now();
    await publisher.stop();
    expect(Date.now() - started).toBeLessThan(WRITE_MS + 150);
    expect(writes).toEqual(['mx']);
  });

  it('a pass not stopped writes every country', async () => {
    const writes: string[] = [];
    let revision = 0;
    const publisher = new CountryStatusPublisher(
      {
        kv: {
          put: async (key: string) => {
            writes.push(key);
            return ++revision;
          },
        },
        read: async () => undefined,
        countries: COUNTRIES,
        logger: silent,
      },
      60_000,
    );
    expect(await publisher.republishOnce()).toEqual([]);
    expect(writes).toEqual(COUNTRIES);
  });
});
