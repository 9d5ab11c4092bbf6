import type { BlobKeyUsage } from '../store/blobs.js';
import type { KeyRing } from './envelope.js';

export interface KeyStatus {
  kekId: string;
  active: boolean;
  configured: boolean;
  blobs: number;
  retainedUntil?: Date;
  retirable: boolean;
}

/**
 * Every key that is configured or still wraps a blob. A key is retirable when it is not the active one
 * and wraps no blob left: taken out of DNC_KEKS (and destroyed), it leaves every copy of what it wrapped
 * unreadable. A key that wraps blobs and is not configured is the opposite mistake: those blobs cannot be
 * opened (the `dnc_job_blobs_without_key` gauge).
 */
export function keyStatus(ring: KeyRing, usage: readonly BlobKeyUsage[]): KeyStatus[] {
  const byId = new Map(usage.map((u) => [u.kekId, u]));
  const ids = [...new Set([...ring.ids, ...byId.keys()])].sort();
  return ids.map((kekId) => {
    const u = byId.get(kekId);
    const active = kekId === ring.activeId;
    return {
      kekId,
      active,
      configured: ring.has(kekId),
      blobs: u?.blobs ?? 0,
      ...(u ? { retainedUntil: u.retainedUntil } : {}),
      retirable: !active && !u,
    };
  });
}

/** Blobs whose key is not configured (they cannot be opened), and those keys' ids. */
export function blobsWithoutKey(ring: KeyRing, usage: readonly { kekId: string; blobs: number }[]) {
  const missing = usage.filter((u) => !ring.has(u.kekId));
  return { blobs: missing.reduce((n, u) => n + u.blobs, 0), kekIds: missing.map((u) => u.kekId) };
}
