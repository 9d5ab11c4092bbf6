// Types of written-forms.mjs (a plain module so the benchmark runs it without a build).
export function prng(seed: number): () => number;
export function writtenForm(r: () => number, country: 'mx' | 'ar' | 'co'): string;
export function realisticForm(r: () => number, country: 'mx' | 'ar' | 'co'): string;
