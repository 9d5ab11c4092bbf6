export { type QuotaConfig, quotaConfig } from './config.js';
export { periodOf, transition } from './domain/period.js';
export { type RunningQuota, startQuota } from './server.js';
export { Ledger } from './store/ledger.js';
