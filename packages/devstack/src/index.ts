export * from './invariants.js';
export * from './stack.js';
export * from './teardown.js';
