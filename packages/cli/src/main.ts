#!/usr/bin/env node
import { runCli } from './run.js';

// Ctrl-C, a terminal closed and a `kill` end a run the same way: a job admitted is named (it keeps
// running) and the private copy of standard input (phone numbers) is removed before the process exits.
const controller = new AbortController();
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.once(signal, () => controller.abort());

const status = await runCli(process.argv.slice(2), {
  stdout: process.stdout,
  stderr: process.stderr,
  stdin: process.stdin,
  env: process.env,
  signal: controller.signal,
});
process.exitCode = status;
