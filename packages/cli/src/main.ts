#!/usr/bin/env node
import { runCli } from './run.js';

const controller = new AbortController();
process.once('SIGINT', () => controller.abort());

const status = await runCli(process.argv.slice(2), {
  stdout: process.stdout,
  stderr: process.stderr,
  stdin: process.stdin,
  env: process.env,
  signal: controller.signal,
});
process.exitCode = status;
