#!/usr/bin/env node
// Micro benchmark of the numbering implementations over a realistic mixed input set (E.164, national,
// separators, some obsolete forms, extensions, URIs, foreign numbers and junk; scripts/written-forms.mjs).
// Runs the compiled code: `npx tsc -b packages/numbering` first (`npm run bench:numbering` does both).
//
//   node packages/numbering/scripts/bench-numbering.mjs [inputsPerCountry] [seed]
import { createNumbering, decideFast, NUMBERING_COUNTRIES, UNDECIDED } from '../dist/index.js';
import { prng, realisticForm } from './written-forms.mjs';

const SIZE = Number(process.argv[2] ?? 100_000);
const SEED = Number(process.argv[3] ?? 7);

// Best of five windows: the machine is shared, and interference only ever slows a window down.
function rate(normalize, inputs, minMillis) {
  let best = 0;
  for (let i = 0; i < 5; i++) best = Math.max(best, window(normalize, inputs, minMillis / 5));
  return best;
}

function window(normalize, inputs, minMillis) {
  let sink = 0;
  let calls = 0;
  const start = performance.now();
  let elapsed = 0;
  do {
    for (let i = 0; i < inputs.length; i++) sink += normalize(inputs[i]);
    calls += inputs.length;
    elapsed = performance.now() - start;
  } while (elapsed < minMillis);
  if (Number.isNaN(sink)) throw new Error('unreachable');
  return (calls / elapsed) * 1000;
}

const fmt = (n) => Math.round(n).toLocaleString('en-US');
console.log(`inputs per country: ${SIZE}, seed ${SEED}, node ${process.version}`);
for (const country of NUMBERING_COUNTRIES) {
  const random = prng(SEED);
  const inputs = Array.from({ length: SIZE }, () => realisticForm(random, country));
  const fast = createNumbering(country, 'fast');
  const reference = createNumbering(country, 'reference');
  let fallbacks = 0;
  let mismatches = 0;
  for (const input of inputs) {
    if (decideFast(country, input) === UNDECIDED) fallbacks++;
    if (fast.normalize(input) !== reference.normalize(input)) mismatches++;
  }
  // Warm both paths, then measure.
  rate(fast.normalize, inputs, 200);
  const referenceRate = rate(reference.normalize, inputs.slice(0, Math.min(SIZE, 20_000)), 1500);
  const fastRate = rate(fast.normalize, inputs, 1500);
  const decidedInputs = inputs.filter((input) => decideFast(country, input) !== UNDECIDED);
  const decidedRate = rate(fast.normalize, decidedInputs, 1000);
  console.log(
    `${country}: reference ${fmt(referenceRate)}/s, fast ${fmt(fastRate)}/s (x${(fastRate / referenceRate).toFixed(1)}; ` +
      `${fmt(decidedRate)}/s on the inputs it decides itself), fallback ${((100 * fallbacks) / SIZE).toFixed(3)}% (${fallbacks}), ` +
      `mismatches ${mismatches}`,
  );
  if (mismatches > 0) process.exitCode = 1;
}
