/** Country codes the request schema accepts. */
export const COUNTRY_CODES = ['mx', 'ar', 'co', 'es', 'au', 'sg'] as const;
export type CountryCode = (typeof COUNTRY_CODES)[number];

/** The sellable and operational catalog. The others are technical codes only (planned). */
export const LIVE_COUNTRIES: readonly CountryCode[] = ['mx', 'ar', 'co'];

/** Countries activated at the moment their initial payment succeeds, with no manual step. */
export const ACTIVATED_ON_PAYMENT: readonly CountryCode[] = ['co'];

export function isCountryCode(value: string): value is CountryCode {
  return (COUNTRY_CODES as readonly string[]).includes(value);
}

export function isLive(country: string): boolean {
  return (LIVE_COUNTRIES as readonly string[]).includes(country);
}
