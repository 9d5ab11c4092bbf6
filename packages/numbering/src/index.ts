export { decideFast, patternBits, TABLES_LIBPHONENUMBER_VERSION, UNDECIDED } from './fast.js';
export {
  createNormalizer,
  isRegistryKey,
  type Normalizer,
  NUMBERING_RULES,
  outcomeOfNormalized,
} from './normalizer.js';
export { createNumbering, type Numbering, type NumberingImplementation } from './numbering.js';
export {
  type Classification,
  classifyReference,
  lineKey,
  mexicanObsoleteLine,
  NUMBERING_COUNTRIES,
  type NumberingCountry,
  normalizeReference,
} from './reference.js';
export { cleanWrittenForm } from './written-form.js';
