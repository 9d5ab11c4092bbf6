#!/usr/bin/env node
import { runCli } from './cli.js';
import { commands } from './commands/index.js';

process.exitCode = await runCli(process.argv.slice(2), commands);
