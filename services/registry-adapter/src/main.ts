import { fileURLToPath } from 'node:url';
import { loadConfig, runMain } from '@dnc/kit';
import { adapterConfig } from './config.js';
import { startAdapter } from './server.js';

export async function main(): Promise<void> {
  const config = loadConfig(adapterConfig);
  const adapter = await startAdapter(config);
  adapter.service.handleSignals();
}

if (process.argv[1] === fileURLToPath(import.meta.url)) void runMain('registry-adapter', main);
