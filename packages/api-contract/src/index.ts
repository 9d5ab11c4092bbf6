export * from './code-samples.js';
export * from './error-codes.js';
export * from './limits.js';
export * from './openapi.js';
export * from './routes.js';
export * from './schemas.js';
export * from './versioning.js';
