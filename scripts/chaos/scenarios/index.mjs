// Every scenario in the order the suite runs them: the ones that leave the stack as they found it
// first, the process and dependency faults after.
import { s10AdapterFaults, s11CancelInFlight, s12HardCap } from './adapter.mjs';
import { s6NatsDown, s8PostgresRestart, s9Redis } from './dependencies.mjs';
import { s18KillAdmissionAndScheduler } from './double-kill.mjs';
import { s19KillQuotaAndAdapter } from './kills.mjs';
import { s2RateLimit, s3IdempotencyRace, s16KeyRotation } from './limits.mjs';
import { s1Load, s17SlowClients } from './load.mjs';
import { s4WorkerKills, s5KillBetweenClaimAndInsert, s7RedeliveryAndStop } from './processes.mjs';
import { s13CleanupRetries } from './retention.mjs';

export const SCENARIOS = [
  {
    id: 'S1',
    title: 'load held',
    run: (w, l, s) =>
      s1Load(w, l, { durationS: s.loadS, customers: s.customers, rate: s.rate, enforceLatency: !s.smoke }),
  },
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
    id: 'S10',
    title: 'adapter faults',
    run: (w, l, s) => s10AdapterFaults(w, l, { phaseS: s.smoke ? 6 : 30 }),
  },
  { id: 'S11', title: 'cancel during in-flight calls', run: (w, l) => s11CancelInFlight(w, l, {}) },
  { id: 'S13', title: 'retention cleanup failing', run: (w, l) => s13CleanupRetries(w, l) },
  {
    id: 'S4',
    title: 'worker kills',
    run: (w, l, s) =>
      s4WorkerKills(
        w,
        l,
        s.smoke ? { seconds: 20, minGapS: 5, maxGapS: 8 } : { seconds: 180, minGapS: 5, maxGapS: 30 },
      ),
  },
  { id: 'S7', title: 'redelivery and a stopped worker', run: (w, l) => s7RedeliveryAndStop(w, l, {}) },
  {
    id: 'S5',
    title: 'kills between claim and insert',
    run: (w, l, s) => s5KillBetweenClaimAndInsert(w, l, { perRound: s.smoke ? 4 : 10 }),
  },
  {
    id: 'S18',
    title: 'admission and scheduler killed together',
    run: (w, l, s) => s18KillAdmissionAndScheduler(w, l, { submissions: s.smoke ? 16 : 40 }),
  },
  {
    id: 'S19',
    title: 'quota and adapter killed',
    run: (w, l, s) =>
      s19KillQuotaAndAdapter(
        w,
        l,
        s.smoke
          ? { kills: 3, minGapS: 2, maxGapS: 4, downMs: 1_000 }
          : { kills: 8, minGapS: 4, maxGapS: 12, downMs: 3_000 },
      ),
  },
  { id: 'S6', title: 'NATS down', run: (w, l, s) => s6NatsDown(w, l, { downS: s.smoke ? 15 : 60 }) },
  {
    id: 'S8',
    title: 'PostgreSQL restart',
    run: (w, l, s) => s8PostgresRestart(w, l, { downS: s.smoke ? 3 : 10 }),
  },
  { id: 'S9', title: 'Redis faults', run: (w, l, s) => s9Redis(w, l, { phaseS: s.smoke ? 5 : 20 }) },
  { id: 'S12', title: 'hard cap', run: (w, l) => s12HardCap(w, l, {}) },
  {
    id: 'S17',
    title: 'slow clients',
    run: (w, l, s) => s17SlowClients(w, l, { boundMs: 22_000, holdS: 25, enforceLatency: !s.smoke }),
  },
];
