export { type AdapterConfig, adapterConfig } from './config.js';
export { MAX_CHECK_BATCH } from './routes.js';
export { type RunningAdapter, startAdapter } from './server.js';
export { createNormalizer, MAX_PHONE_LENGTH, type Normalizer } from './validation.js';
