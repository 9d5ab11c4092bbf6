import { randomBytes, type ScryptOptions, scrypt, timingSafeEqual } from 'node:crypto';

/**
 * Passwords are hashed with scrypt (memory-hard, in Node's crypto: no dependency) with OWASP's current
 * parameters N=2^17, r=8, p=1, a 16-byte random salt and a 32-byte output. Stored as one string that
 * names its parameters, so they can be raised later and old hashes still verify:
 *   `scrypt$ln=17,r=8,p=1$<salt base64>$<hash base64>`
 */
export const SCRYPT_LOG_N = 17;
const R = 8;
const P = 1;
const KEY_LENGTH = 32;

/** NIST SP 800-63B: at least 12 characters here, no composition rules; bounded so hashing stays cheap. */
export const MIN_PASSWORD = 12;
export const MAX_PASSWORD = 128;

/**
 * Derivations running at once in this process: each takes 128 * N * r bytes (128 MiB at the defaults)
 * outside the heap, so a burst of sign-ins queues here instead of growing memory past the pod's limit.
 */
export const MAX_CONCURRENT_HASHES = 2;
/**
 * Derivations that may wait for a slot. Past it a check is refused at once (`PasswordChecksBusy`: 503
 * with Retry-After) instead of queued: the queue had no bound, and sign-ins from a few dozen addresses
 * within their per-address limit (or from one, with Redis down: that limit degrades open) grew it
 * faster than two derivations at a time drain it (~0.3-0.5 s each at N=2^17). Every sign-in, second
 * factor, invitation and password change waited behind the backlog, for clients long gone, and it
 * outlasted the burst. Bounded, a wait is at most about 16 derivations' time.
 */
export const MAX_WAITING_HASHES = 32;
let running = 0;
const waiting: (() => void)[] = [];

/** The password could not be checked now: too many are waiting. Retry shortly (nothing was judged). */
export class PasswordChecksBusy extends Error {
  constructor() {
    super('too many password checks waiting');
    this.name = 'PasswordChecksBusy';
  }
}

/** Derivations in progress now (the bound above keeps it at most MAX_CONCURRENT_HASHES). */
export function hashesInProgress(): number {
  return running;
}

async function derive(password: string, salt: Buffer, logN: number, r: number, p: number): Promise<Buffer> {
  // A finishing derivation hands its slot to the next waiter, so no newcomer can slip in between.
  if (running >= MAX_CONCURRENT_HASHES) {
    if (waiting.length >= MAX_WAITING_HASHES) throw new PasswordChecksBusy();
    await new Promise<void>((go) => waiting.push(go));
  } else running++;
  try {
    const options: ScryptOptions = { N: 2 ** logN, r, p, maxmem: 2 * 128 * r * 2 ** logN };
    return await new Promise((resolve, reject) =>
      scrypt(password.normalize('NFKC'), salt, KEY_LENGTH, options, (err, key) =>
        err ? reject(err) : resolve(key),
      ),
    );
  } finally {
    const next = waiting.shift();
    if (next) next();
    else running--;
  }
}

/** Why a new password is refused, or undefined when it is acceptable. */
export function passwordProblem(password: string, email: string): string | undefined {
  const length = [...password].length;
  if (length < MIN_PASSWORD) return `The password needs at least ${MIN_PASSWORD} characters.`;
  if (length > MAX_PASSWORD) return `The password has at most ${MAX_PASSWORD} characters.`;
  if (password.trim().toLowerCase() === email.trim().toLowerCase())
    return 'The password must not be the email address.';
  return undefined;
}

export async function hashPassword(password: string, logN = SCRYPT_LOG_N): Promise<string> {
  const salt = randomBytes(16);
  const hash = await derive(password, salt, logN, R, P);
  return `scrypt$ln=${logN},r=${R},p=${P}$${salt.toString('base64')}$${hash.toString('base64')}`;
}

const STORED = /^scrypt\$ln=(\d{1,2}),r=(\d{1,2}),p=(\d{1,2})\$([A-Za-z0-9+/=]+)\$([A-Za-z0-9+/=]+)$/;

/** Constant-time check of a password against a stored hash; false for anything malformed. */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const m = STORED.exec(stored);
  if (!m) return false;
  const expected = Buffer.from(m[5]!, 'base64');
  const actual = await derive(
    password,
    Buffer.from(m[4]!, 'base64'),
    Number(m[1]),
    Number(m[2]),
    Number(m[3]),
  );
  return actual.length === expected.length && timingSafeEqual(actual, expected);
}

/**
 * A hash of no one's password, verified against when an email is unknown, so an unknown email and a
 * wrong password take the same time (no account enumeration by timing).
 */
export function decoyHash(logN = SCRYPT_LOG_N): Promise<string> {
  return hashPassword(randomBytes(18).toString('base64'), logN);
}
