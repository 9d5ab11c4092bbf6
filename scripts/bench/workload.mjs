// The synthetic workload shared by the bench and its floor: a registry of N Colombian numbers and
// request inputs whose expected classification is known. Deterministic (no randomness), so the floor
// and the services see the same bytes.
//
// Registry slots: blocks of one 3-digit prefix and 7 subscriber digits. A registered line takes an
// even subscriber number of its block, the unregistered line next to it the odd one, so lookups hit
// and miss in the same key neighbourhood. Mobiles (3xx) and Bogota landlines (601, subscriber numbers
// 2,000,000..7,999,999, the range the numbering plan accepts) are mixed.
import { createWriteStream } from 'node:fs';

export const COUNTRY = 'co';

const BLOCKS = [
  { prefix: '300', from: 0, to: 10_000_000 },
  { prefix: '601', from: 2_000_000, to: 8_000_000 },
  { prefix: '311', from: 0, to: 10_000_000 },
  { prefix: '320', from: 0, to: 10_000_000 },
  { prefix: '350', from: 0, to: 10_000_000 },
];
export const MAX_REGISTRY = BLOCKS.reduce((n, b) => n + (b.to - b.from) / 2, 0);

/** The 10 national digits of registered line i (odd = true: its unregistered neighbour). */
export function lineOf(i, odd = false) {
  let rest = i;
  for (const b of BLOCKS) {
    const slots = (b.to - b.from) / 2;
    if (rest < slots) return `${b.prefix}${String(b.from + rest * 2 + (odd ? 1 : 0)).padStart(7, '0')}`;
    rest -= slots;
  }
  throw new Error(`registry line ${i} is past ${MAX_REGISTRY}`);
}

/** Written forms a customer file holds; every one normalizes to the same line. */
export const FORMS = [
  (d) => `+57${d}`,
  (d) => `+57 ${d.slice(0, 3)} ${d.slice(3, 6)} ${d.slice(6)}`,
  (d) => d,
  (d) => `(${d.slice(0, 3)}) ${d.slice(3, 6)}-${d.slice(6)}`,
  (d) => `${d.slice(0, 3)}.${d.slice(3, 6)}.${d.slice(6)}`,
  (d) => `57 ${d}`,
];

/** Write the registry file (one written form per line) and resolve with its byte size. */
export async function writeRegistryFile(file, size) {
  if (size > MAX_REGISTRY) throw new Error(`registry size ${size} is past ${MAX_REGISTRY}`);
  const out = createWriteStream(file);
  let buf = '';
  let bytes = 0;
  for (let i = 0; i < size; i++) {
    buf += `${FORMS[i % FORMS.length](lineOf(i))}\n`;
    if (buf.length > 1 << 20) {
      bytes += buf.length;
      if (!out.write(buf)) await new Promise((r) => out.once('drain', r));
      buf = '';
    }
  }
  bytes += buf.length;
  out.end(buf);
  await new Promise((r, j) => {
    out.once('finish', r);
    out.once('error', j);
  });
  return bytes;
}

/** Registry lines without a file (the floor builds its index from the same written forms). */
export function* registryLines(size) {
  for (let i = 0; i < size; i++) yield FORMS[i % FORMS.length](lineOf(i));
}

/**
 * `count` mixed inputs against a registry of `size`: 45% registered lines, 45% unregistered valid
 * lines, 10% invalid (valid numbers of another country, too short, not a number). Returns the phones
 * and the expected summary. `seed` shifts the sample so different requests carry different numbers.
 * `e164`: every valid number in E.164 (`+573001234567`, the most common way of writing them), for the
 * v2 jobs: 500,000 of them fit the 25 MiB result estimate since it counts invalid entries only for the
 * inputs the numbering rules reject.
 */
export function inputs(count, size, seed = 0, { e164 = false } = {}) {
  const phones = new Array(count);
  const expected = { prohibited: 0, safe: 0, invalid: 0 };
  for (let i = 0; i < count; i++) {
    const k = i + seed * 7_777;
    const j = (k * 7_919) % size;
    const r = (k * 37) % 100;
    const form = e164 ? FORMS[0] : FORMS[k % FORMS.length];
    if (r < 45) {
      phones[i] = form(lineOf(j));
      expected.prohibited++;
    } else if (r < 90) {
      phones[i] = form(lineOf(j, true));
      expected.safe++;
    } else {
      phones[i] =
        r < 94
          ? `+52 55 ${String(1000_0000 + (k % 9_000_000)).slice(-8)}`
          : r % 2
            ? `x${k}`
            : `30${k % 1000}`;
      expected.invalid++;
    }
  }
  return { phones, expected };
}

/** The v1/v2 request body, serialized once (the bench and the floor parse the same bytes). */
export function body(phones) {
  return JSON.stringify({ country: COUNTRY, phones });
}
