/**
 * How many result downloads this process serves at once, in all and per organization: the job
 * scheduler's GetJobResult streams, and the gateway's GET .../result responses (found by a review,
 * 2026-12-05: the scheduler sent a result of under 4 MiB whole into the gateway's stream window and
 * freed its slot at once, while the gateway held the bytes for a reader that never took them, up to the
 * download's 15 minutes; a hundred such downloads took the gateway past its memory limit). A download
 * whose reader stops reading holds what its stream has read ahead: the segments of a batch opened at
 * once, the next batch fetched, the message waiting for the socket's drain (several MiB), for as long
 * as its caller's deadline. Unbounded, one organization's stalled
 * downloads of a large result, repeated, could take the process past its memory limit and every
 * customer's calls with it. A download over either bound is refused at once with a retryable
 * platform failure (503 and Retry-After: the platform's capacity is not told).
 */
export class ResultStreams {
  private total = 0;
  private readonly perOrg = new Map<string, number>();

  constructor(
    private readonly maxTotal: number,
    private readonly maxPerOrg: number,
  ) {}

  get active(): number {
    return this.total;
  }

  /** A slot for one download of `orgId`, or undefined when either bound is reached. Release once. */
  acquire(orgId: string): (() => void) | undefined {
    const mine = this.perOrg.get(orgId) ?? 0;
    if (this.total >= this.maxTotal || mine >= this.maxPerOrg) return undefined;
    this.total++;
    this.perOrg.set(orgId, mine + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.total--;
      const left = (this.perOrg.get(orgId) ?? 1) - 1;
      if (left > 0) this.perOrg.set(orgId, left);
      else this.perOrg.delete(orgId);
    };
  }
}
