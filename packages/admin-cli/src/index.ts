export * from './cli.js';
// The commands themselves, for tools that run many of them in one process (the chaos and fuzz suites).
export { commands } from './commands/index.js';
