import { randomBytes, type ScryptOptions, scrypt, timingSafeEqual } from 'node:crypto';
import { ZxcvbnFactory } from '@zxcvbn-ts/core';
import { adjacencyGraphs, dictionary as commonDictionary } from '@zxcvbn-ts/language-common';
import { dictionary as englishDictionary, translations } from '@zxcvbn-ts/language-en';

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

/**
 * NIST SP 800-63B 5.1.1.2: a new password is compared against values commonly used, expected or
 * compromised. Found by a review (2026-12-05): only its length was checked, so `password1234`,
 * `aaaaaaaaaaaa` or `dncscrub2026` were accepted. zxcvbn-ts (Dropbox's zxcvbn, maintained in TypeScript)
 * holds the lists: about 49,000 passwords of breach corpora and the 7,776 diceware words
 * (language-common), 56,000 common English words, first names, surnames and Wikipedia words
 * (language-en), and the words of this service (below). It finds them inside a password too (capitalized,
 * reversed, with l33t substitutions, years or dates around them) along with keyboard rows, repeats and
 * sequences (`qwertyuiop`, `abcabcabc`, `123456789012`), and estimates the guesses an attacker who tries
 * those first would need. Offline: nothing leaves the process.
 *
 * The lists are ranked once, when this module loads (about 0.6 s, 30 MB of heap, on a developer machine);
 * a check then takes about 10 ms. It runs on the event loop, so its cost is bounded: only the first
 * GUESS_CHECK_LENGTH characters are judged (a password whose first 64 are hard to guess is), and l33t
 * spellings with more than 4 substituted characters are not tried (unbounded, one 128-character password
 * took a second).
 */
const GUESS_CHECK_LENGTH = 64;
/** Words of this service and well-known example passwords: expected values (NIST's context-specific words). */
const CONTEXT_WORDS = [
  'dnc',
  'donotcall',
  'do not call',
  'scrub',
  'scrubbing',
  'dncscrub',
  'dashboard',
  'registry',
  'correcthorsebatterystaple',
  'correct horse battery staple',
];
const guesser = new ZxcvbnFactory({
  dictionary: { ...commonDictionary, ...englishDictionary, 'dnc-context': CONTEXT_WORDS },
  graphs: adjacencyGraphs,
  translations,
  maxLength: GUESS_CHECK_LENGTH,
  l33tMaxSubstitutions: 4,
});

/**
 * A new password needs at least 10^10 estimated guesses: zxcvbn's top score, "strong protection from an
 * offline slow-hash scenario", so a stolen hash table does not give its weakest passwords away quickly
 * either. Below it are the listed values and what is built from them; a passphrase of three or four
 * uncommon words, or 12 random characters, is well above it.
 */
export const MIN_GUESSES_LOG10 = 10;

/** The person's email in pieces (`jane.doe@acme-corp.com`: jane, doe, acme, corp...), as expected words. */
function emailWords(email: string): string[] {
  const e = email.trim().toLowerCase();
  const local = e.split('@')[0] ?? '';
  const pieces = e.split(/[^\p{L}\p{N}]+/u).filter((w) => w.length >= 3);
  return [...new Set([e, local, ...pieces])];
}

/** Why the password is too easy to guess, in words that never repeat it; undefined when it is not. */
function guessable(password: string, email: string): string | undefined {
  const result = guesser.check(password.normalize('NFKC'), emailWords(email));
  if (result.guessesLog10 >= MIN_GUESSES_LOG10) return undefined;
  const from = (name: string) => result.sequence.some((m) => m['dictionaryName'] === name);
  const why = from('userInputs')
    ? 'It contains part of your email address.'
    : from('dnc-context')
      ? "It is built on this service's name or a well-known example password."
      : (result.feedback.warning ?? 'It is built on common words or patterns.');
  return `The password is too easy to guess. ${why} Add a few less common words, or make it longer.`;
}

/** Why a new password is refused, or undefined when it is acceptable. */
export function passwordProblem(password: string, email: string): string | undefined {
  const length = [...password].length;
  if (length < MIN_PASSWORD) return `The password needs at least ${MIN_PASSWORD} characters.`;
  if (length > MAX_PASSWORD) return `The password has at most ${MAX_PASSWORD} characters.`;
  if (password.trim().toLowerCase() === email.trim().toLowerCase())
    return 'The password must not be the email address.';
  return guessable(password, email);
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
