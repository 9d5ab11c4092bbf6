export * from './invariants.js';
export * from './leaks.js';
export * from './nats-server.js';
export * from './pki.js';
export * from './ports.js';
export * from './stack.js';
export * from './teardown.js';
