import type { LiveCountry } from '@dnc/api-contract/limits';

// The country vocabulary (all codes, the live catalog, isCountryCode, isLiveCountry) is the contract's:
// @dnc/api-contract/limits. What is admission's own is how a purchase is activated.

/** Countries activated at the moment their initial payment succeeds, with no manual step. */
export const ACTIVATED_ON_PAYMENT: readonly LiveCountry[] = ['co'];
