import { fileURLToPath } from 'node:url';
import { loadConfig, runMain } from '@dnc/kit';
import { quotaConfig } from './config.js';
import { startQuota } from './server.js';

export async function main(): Promise<void> {
  const config = loadConfig(quotaConfig);
  const { service } = await startQuota(config);
  service.handleSignals();
}

if (process.argv[1] === fileURLToPath(import.meta.url)) void runMain('quota', main);
