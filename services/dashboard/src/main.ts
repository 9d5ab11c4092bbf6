import { fileURLToPath } from 'node:url';
import { loadConfig, runMain } from '@dnc/kit';
import { dashboardConfig } from './config.js';
import { startDashboard } from './server.js';

export async function main(): Promise<void> {
  const config = loadConfig(dashboardConfig);
  const { service } = await startDashboard(config);
  service.handleSignals();
}

if (process.argv[1] === fileURLToPath(import.meta.url)) void runMain('dashboard', main);
