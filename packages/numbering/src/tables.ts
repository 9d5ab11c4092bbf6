/**
 * Shape of the per-country tables in `generated/<cc>.ts`, produced by
 * `scripts/generate-numbering.mjs` from the libphonenumber-js `max` metadata. Strings keep the files
 * small and diff-friendly; `fast.ts` decodes them once at load.
 */
export interface CountryTables {
  /** Lowercase ISO 3166-1 alpha-2 code. */
  country: string;
  /** The libphonenumber-js release whose metadata the tables were generated from. */
  libphonenumberVersion: string;
  callingCode: string;
  /** Possible national number lengths (general description), ascending. */
  possibleLengths: number[];
  /** Index: national number length; value: DFA accept bits of the number types allowing that length. */
  typeBitsByLength: number[];
  /** IDD prefixes, space separated, in the order the IDD regular expression tries them. */
  iddPrefixes: string;
  /**
   * National prefixes for parsing, space separated, in the order the regular expression tries them.
   * `digits` or `digits/group`: `group` is the captured group the transform rule substitutes.
   */
  nationalPrefixes: string;
  /** National prefix transform rule `<before>$1<after>`, or null when the country has none. */
  transform: { before: string; after: string } | null;
  dfaStates: number;
  /** Base64 of an Int32Array[dfaStates * 10]: next state per digit, -1 for the dead state. */
  dfaTransitions: string;
  /** Base64 of a Uint16Array[dfaStates]: bit 0 national number pattern, bit 1 + i type i. */
  dfaAccept: string;
}
