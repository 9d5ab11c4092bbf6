export { type QuotaConfig, quotaConfig } from './config.js';
export { fits, periodOf, transition } from './domain/period.js';
export { Ledger } from './ledger.js';
export { type RunningQuota, startQuota } from './server.js';
