import { ar } from './generated/ar.js';
import { co } from './generated/co.js';
import { mx } from './generated/mx.js';
import type { NumberingCountry } from './reference.js';
import type { CountryTables } from './tables.js';

// The fast path's compiled form of the generated tables: prefix tries (IDD, national prefixes) and
// the DFA of the national number patterns, built once per country when the module loads.

export interface Trie {
  /** child[node * 10 + digit]: next node or -1. */
  child: Int32Array;
  /** entry[node]: lowest-priority-index entry ending at node, or -1. */
  entry: Int32Array;
}

export interface CompiledCountry {
  country: NumberingCountry;
  callingCode: string;
  cc: Uint8Array;
  minLength: number;
  maxLength: number;
  lengthMask: number;
  typeBitsByLength: Uint16Array;
  idd: Trie;
  iddLength: Int32Array;
  national: Trie;
  nationalLength: Int32Array;
  /** Group digits of entry e: groupDigits[groupStart[e] .. groupStart[e] + groupLength[e]]; length 0 = none. */
  groupStart: Int32Array;
  groupLength: Int32Array;
  groupDigits: Uint8Array;
  transformBefore: Uint8Array | null;
  transformAfter: Uint8Array;
  trans: Int32Array;
  accept: Uint16Array;
  stripMobileNine: boolean;
  mexicanObsolete: boolean;
}

function digitsOf(s: string): Uint8Array {
  return Uint8Array.from(s, (ch) => ch.charCodeAt(0) - 48);
}

function buildTrie(words: readonly string[]): Trie {
  const child: number[] = new Array(10).fill(-1);
  const entry: number[] = [-1];
  words.forEach((word, index) => {
    let node = 0;
    for (const ch of word) {
      const slot = node * 10 + (ch.charCodeAt(0) - 48);
      let next = child[slot]!;
      if (next < 0) {
        next = entry.length;
        child[slot] = next;
        entry.push(-1);
        for (let d = 0; d < 10; d++) child.push(-1);
      }
      node = next;
    }
    // Keep the first (highest-priority) entry for a repeated string.
    if (entry[node]! < 0) entry[node] = index;
  });
  return { child: Int32Array.from(child), entry: Int32Array.from(entry) };
}

function decodeBase64<T>(text: string, make: (buffer: ArrayBuffer) => T): T {
  const bytes = Buffer.from(text, 'base64');
  const copy = new ArrayBuffer(bytes.length);
  new Uint8Array(copy).set(bytes);
  return make(copy);
}

function compile(country: NumberingCountry, t: CountryTables): CompiledCountry {
  const idd = t.iddPrefixes.split(' ').filter(Boolean);
  // '' means no national prefix for parsing; inside a list, '' is the entry matching nothing.
  const entries = t.nationalPrefixes === '' ? [] : t.nationalPrefixes.split(' ');
  const prefixes = entries.map((e) => e.split('/')[0] ?? '');
  const groups = entries.map((e) => e.split('/')[1] ?? '');
  const groupStart = new Int32Array(groups.length);
  const groupLength = new Int32Array(groups.length);
  const allGroups: number[] = [];
  groups.forEach((g, i) => {
    groupStart[i] = allGroups.length;
    groupLength[i] = g.length;
    for (const ch of g) allGroups.push(ch.charCodeAt(0) - 48);
  });
  let lengthMask = 0;
  for (const len of t.possibleLengths) lengthMask |= 1 << len;
  const trans = decodeBase64(t.dfaTransitions, (b) => new Int32Array(b));
  const accept = decodeBase64(t.dfaAccept, (b) => new Uint16Array(b));
  if (trans.length !== t.dfaStates * 10 || accept.length !== t.dfaStates) {
    throw new Error(`numbering tables for ${country} are corrupt`);
  }
  return {
    country,
    callingCode: t.callingCode,
    cc: digitsOf(t.callingCode),
    minLength: t.possibleLengths[0]!,
    maxLength: t.possibleLengths[t.possibleLengths.length - 1]!,
    lengthMask,
    typeBitsByLength: Uint16Array.from(t.typeBitsByLength),
    idd: buildTrie(idd),
    iddLength: Int32Array.from(idd, (s) => s.length),
    national: buildTrie(prefixes),
    nationalLength: Int32Array.from(prefixes, (s) => s.length),
    groupStart,
    groupLength,
    groupDigits: Uint8Array.from(allGroups),
    transformBefore: t.transform ? digitsOf(t.transform.before) : null,
    transformAfter: t.transform ? digitsOf(t.transform.after) : new Uint8Array(0),
    trans,
    accept,
    stripMobileNine: country === 'ar',
    mexicanObsolete: country === 'mx',
  };
}

export const COMPILED: Record<NumberingCountry, CompiledCountry> = {
  mx: compile('mx', mx),
  ar: compile('ar', ar),
  co: compile('co', co),
};

export function trieMatch(t: Trie, src: Uint8Array, offset: number, length: number): number {
  let best = t.entry[0]!;
  let node = 0;
  for (let i = 0; i < length; i++) {
    node = t.child[node * 10 + src[offset + i]!]!;
    if (node < 0) break;
    const e = t.entry[node]!;
    if (e >= 0 && (best < 0 || e < best)) best = e;
  }
  return best;
}

export function dfaAccept(c: CompiledCountry, src: Uint8Array, offset: number, length: number): number {
  let state = 0;
  const trans = c.trans;
  for (let i = 0; i < length; i++) {
    state = trans[state * 10 + src[offset + i]!]!;
    if (state < 0) return 0;
  }
  return c.accept[state]!;
}
