import { fileURLToPath } from 'node:url';
import { loadConfig, runMain } from '@dnc/kit';
import { gatewayConfig } from './config.js';
import { startGateway } from './server.js';

export async function main(): Promise<void> {
  const config = loadConfig(gatewayConfig);
  const { service } = await startGateway(config);
  service.handleSignals();
}

if (process.argv[1] === fileURLToPath(import.meta.url)) void runMain('gateway', main);
