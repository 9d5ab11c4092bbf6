import { fileURLToPath } from 'node:url';
import { loadConfig, runMain } from '@dnc/kit';
import { jobsConfig } from './config.js';
import { startJobScheduler } from './server.js';

export async function main(): Promise<void> {
  const config = loadConfig(jobsConfig);
  const { service } = await startJobScheduler(config);
  service.handleSignals();
}

if (process.argv[1] === fileURLToPath(import.meta.url)) void runMain('job-scheduler', main);
