export * from './stack.js';
export * from './teardown.js';
