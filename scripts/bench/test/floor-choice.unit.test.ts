import { describe, expect, it } from 'vitest';
import { fasterV2Floor } from '../stats.mjs';

// The v2 floor is measured twice (at the bench's start, and again right before the v2 phases, minutes
// later on a VM whose speed drifts); each ratio is judged against the faster, never the flattering one.
const floor = (job: number, fourJobs: number) => ({
  v2_job_ms: { total: { p50: job }, parse: { p50: job / 20 } },
  v2_job_result_bytes: job * 10,
  v2_small_job_ms: { total: { p50: fourJobs / 4 } },
  v2_4_jobs_ms: fourJobs,
});

describe('fasterV2Floor', () => {
  it('takes the faster job floor and the faster small-jobs floor, each whole from its own measurement', () => {
    const start = floor(630, 800);
    const again = floor(1060, 560);
    expect(fasterV2Floor(start, again)).toEqual({
      v2_job_ms: start.v2_job_ms,
      v2_job_result_bytes: start.v2_job_result_bytes,
      v2_small_job_ms: again.v2_small_job_ms,
      v2_4_jobs_ms: 560,
    });
  });

  it('takes the second measurement when it is the faster one', () => {
    const start = floor(1060, 560);
    const again = floor(630, 800);
    const chosen = fasterV2Floor(start, again);
    expect(chosen.v2_job_ms.total.p50).toBe(630);
    expect(chosen.v2_4_jobs_ms).toBe(560);
  });
});
