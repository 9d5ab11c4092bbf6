export { type AdmissionConfig, admissionConfig } from './config.js';
export { generateApiKey, parseApiKey } from './domain/api-key.js';
export { admissionGate, CHECK_ORDER } from './domain/check-order.js';
export { idempotencyKeyMac } from './domain/idempotency.js';
export { type RunningAdmission, startAdmission } from './server.js';
