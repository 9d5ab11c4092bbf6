// Every scenario in the order the suite runs them: the ones that leave the stack as they found it
// first, the process and dependency faults after.
import { s2RateLimit, s3IdempotencyRace, s16KeyRotation } from './limits.mjs';
import { s1Load, s17SlowClients } from './load.mjs';

export const SCENARIOS = [
  { id: 'S1', title: 'load held', run: (w, l, s) => s1Load(w, l, { durationS: s.loadS }) },
  {
    id: 'S2',
    title: 'rate limit across gateways',
    run: (w, l, s) => s2RateLimit(w, l, { rounds: s.smoke ? 2 : 10 }),
  },
  {
    id: 'S3',
    title: 'idempotency race',
    run: (w, l, s) => s3IdempotencyRace(w, l, { rounds: s.smoke ? 20 : 200 }),
  },
  {
    id: 'S16',
    title: 'key rotation under load',
    run: (w, l, s) => s16KeyRotation(w, l, { seconds: s.smoke ? 9 : 30 }),
  },
  {
    id: 'S17',
    title: 'slow clients',
    run: (w, l, s) => s17SlowClients(w, l, { boundMs: 15_000, holdS: s.smoke ? 20 : 60 }),
  },
];
