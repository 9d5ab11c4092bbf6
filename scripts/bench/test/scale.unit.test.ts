import { describe, expect, it } from 'vitest';
import { extrapolate, medianCosts, render, unitCosts } from '../scale.mjs';

// The scale model's arithmetic (scripts/bench/README.md, "Scale model"): per-unit costs from a run's
// phases, the median over runs figure by figure, and the two target loads derived from them.
function run(gatewayMs: number, commits: number) {
  const cpu = (gateway: number) => ({ gateway, admission: 0.2, quota: 0.1, 'adapter-co': 0.05 });
  return {
    environment: { git_commit: 'abcdef0123' },
    v1_sustained: { batch_mean: { admit: 10, check: 12, complete: 14 }, rps_mean: 1000 },
    v2_job: { inputs: 500_000, request_bytes: 8e6, result_bytes: 9e6, total_ms: 1200 },
    phases: {
      'v1 single sustained': {
        units: { count: 1000 },
        cpu_ms_per_unit: cpu(gatewayMs),
        postgres_per_unit: { commits, wal_syncs_server_wide: commits / 2, rows_written: 5 },
        postgres: { wal_bytes_server_wide: 2_500_000 },
        rpcs_per_unit: 0.3,
      },
      'v1 one number, sequential': {
        units: { count: 300 },
        cpu_ms_per_unit: cpu(4),
        postgres_per_unit: { commits: 4.7 },
        rpcs_per_unit: 5,
      },
      'v1 10k': { units: { count: 250_000 }, cpu_ms_per_unit: cpu(0.001) },
      'v2 large job, repeated': {
        units: { count: 2_500_000 },
        cpu_ms_per_unit: { gateway: 0.0006, 'job-worker': 0.0008 },
        postgres: { commits: 500, wal_bytes_server_wide: 20e6 },
        rpcs_served: { 'dnc.registry.v1.RegistryAdapterService/Check': 50 },
      },
    },
  };
}

describe('scale model', () => {
  it('reads each unit cost of a run: per request, per number, per job', () => {
    const c = unitCosts(run(0.4, 0.3));
    expect(c.single.cpuMs.gateway).toBe(0.4);
    expect(c.single.walBytes).toBe(2500);
    expect(c.v1PerNumberUs.gateway).toBe(1);
    expect(c.v2.commitsPerJob).toBe(100);
    expect(c.v2.checkCallsPerJob).toBe(10);
  });

  it('takes the median of each figure on its own', () => {
    const c = medianCosts([run(0.3, 0.5), run(0.5, 0.1), run(0.4, 0.3)].map(unitCosts));
    expect(c.single.cpuMs.gateway).toBe(0.4);
    expect(c.single.commits).toBe(0.3);
  });

  it('derives the target loads from the costs: 5,000 req/s x 0.4 ms = 2 cores, 4 replicas at 60%', () => {
    const e = extrapolate(unitCosts(run(0.4, 0.3)));
    expect(e.single.cores.gateway).toBeCloseTo(2, 10);
    expect(e.single.replicas.gateway).toBe(4);
    expect(e.single.commitsPerSecond).toBeCloseTo(1500, 6);
    expect(e.single.walMBPerSecond).toBeCloseTo(12.5, 6);
    // 500,000 numbers x (0.6 + 0.8) us = 0.7 CPU-seconds a job; 200 of them an hour.
    expect(e.jobs.jobCpu).toBeCloseTo(0.7, 6);
    expect(e.jobs.commitsPerHour).toBeCloseTo(20_000, 6);
  });

  it('renders the table and the two extrapolations, and refuses a run without the phases', () => {
    expect(render([run(0.4, 0.3)])).toContain('| gateway | 0.4 | 4 | 1 | 0.6 |');
    expect(() => unitCosts({ phases: {} })).toThrow(/a full run/);
  });
});
