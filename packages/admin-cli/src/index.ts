export * from './cli.js';
