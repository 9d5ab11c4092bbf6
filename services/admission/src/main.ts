import { fileURLToPath } from 'node:url';
import { loadConfig, runMain } from '@dnc/kit';
import { admissionConfig } from './config.js';
import { startAdmission } from './server.js';

export async function main(): Promise<void> {
  const config = loadConfig(admissionConfig);
  const { service } = await startAdmission(config);
  service.handleSignals();
}

if (process.argv[1] === fileURLToPath(import.meta.url)) void runMain('admission', main);
