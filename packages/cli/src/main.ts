#!/usr/bin/env node
import { runCli } from './run.js';

// Ctrl-C, a terminal closed and a `kill` end a run the same way: a job admitted is named (it keeps
// running), and numbers still being read from standard input stop being read (they are held in memory
// only, never written to a file).
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
