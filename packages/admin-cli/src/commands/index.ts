import type { Command } from '../cli.js';
import { statusCommand } from './status.js';

// Each area adds its commands here (org, key, purchase, quota, usage, country, registry, adapter, jobs).
export const commands: Command[] = [statusCommand];
