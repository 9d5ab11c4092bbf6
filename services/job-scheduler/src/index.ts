export { jobsConfig } from './config.js';
export { KeyRing } from './crypto/envelope.js';
export * from './domain/failures.js';
export * from './domain/result.js';
export * from './domain/states.js';
export { main } from './main.js';
export { type RunningJobScheduler, startJobScheduler } from './server.js';
