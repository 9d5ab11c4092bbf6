/**
 * v1 admissions this process made and has not completed or aborted yet (admission id -> when). A
 * Complete of one of them needs no read of its claim: it is a v1 claim in progress. Anything else
 * (another replica's admission, a late or repeated Complete) is read from Postgres. Quota stays the
 * judge either way: a reservation released meanwhile is never committed.
 */
export class OpenAdmissions {
  private readonly open = new Map<string, { at: number; orgId: string }>();

  /** Entries older than twice the v1 claim timeout are forgotten (a gateway that never came back). */
  constructor(syncClaimMs: number) {
    const forget = setInterval(() => {
      const before = Date.now() - 2 * syncClaimMs;
      for (const [id, { at }] of this.open) if (at < before) this.open.delete(id);
    }, 60_000);
    forget.unref();
  }

  add(admissionId: string, orgId: string): void {
    this.open.set(admissionId, { at: Date.now(), orgId });
  }

  /** The organization of an open admission. */
  orgOf(admissionId: string): string | undefined {
    return this.open.get(admissionId)?.orgId;
  }

  has(admissionId: string): boolean {
    return this.open.has(admissionId);
  }

  delete(admissionId: string): void {
    this.open.delete(admissionId);
  }
}
