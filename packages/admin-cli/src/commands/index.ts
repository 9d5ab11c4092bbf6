import type { Command } from '../cli.js';
import { adapterDrillCommand } from './adapter.js';
import { auditCommand } from './audit.js';
import { countryCommands } from './country.js';
import { jobsCommands } from './jobs.js';
import { keyCommands } from './key.js';
import { orgCommands } from './org.js';
import { purchaseCommands } from './purchase.js';
import { quotaCommands } from './quota.js';
import { registryLoadCommand, registryStatusCommand } from './registry.js';
import { statusCommand } from './status.js';
import { usageCommand } from './usage.js';
import { userInviteCommand } from './user.js';

// Each area adds its commands here (org, key, purchase, quota, usage, country, registry, adapter, jobs, user).
export const commands: Command[] = [
  statusCommand,
  ...orgCommands,
  ...keyCommands,
  ...purchaseCommands,
  ...quotaCommands,
  usageCommand,
  ...countryCommands,
  registryLoadCommand,
  registryStatusCommand,
  adapterDrillCommand,
  ...jobsCommands,
  userInviteCommand,
  auditCommand,
];
