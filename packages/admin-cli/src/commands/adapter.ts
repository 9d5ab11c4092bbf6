import { createClient } from '@connectrpc/connect';
import { adapterIdentity } from '@dnc/kit';
import { registryv1 } from '@dnc/proto';
import { type Command, intFlag, operatorTransport, UsageError } from '../cli.js';
import { adapterAddress, countryFlag } from './registry.js';

const FAILURES: Record<string, registryv1.DrillFailure> = {
  unavailable: registryv1.DrillFailure.UNAVAILABLE,
  maintenance: registryv1.DrillFailure.MAINTENANCE,
};

/** Game days and end-to-end tests: make one country's adapter slow or failing (DNC_ENABLE_DRILLS=1 only). */
export const adapterDrillCommand: Command = {
  name: 'adapter drill',
  usage:
    'adapter drill --country CC (--latency-ms N | --fail unavailable|maintenance | --clear) [--address HOST:PORT]',
  options: {
    country: { type: 'string' },
    'latency-ms': { type: 'string' },
    fail: { type: 'string' },
    clear: { type: 'boolean' },
    address: { type: 'string' },
  },
  async run(flags, env) {
    const country = countryFlag(flags);
    const latencyMs = intFlag(flags, 'latency-ms', 0, 120_000);
    const failName = flags['fail'];
    const clear = flags['clear'] === true;
    if (failName !== undefined && (typeof failName !== 'string' || !(failName in FAILURES))) {
      throw new UsageError('--fail must be unavailable or maintenance');
    }
    if (!clear && latencyMs === undefined && failName === undefined) {
      throw new UsageError('give --latency-ms N, --fail unavailable|maintenance, or --clear');
    }
    if (clear && (latencyMs !== undefined || failName !== undefined)) {
      throw new UsageError('--clear takes no other drill option');
    }
    const address = await adapterAddress(flags, country, env);
    const admin = createClient(
      registryv1.RegistryAdminService,
      operatorTransport(env, address, adapterIdentity(country)),
    );
    const res = await admin.setDrill(
      {
        clear,
        latencyMs: latencyMs ?? 0,
        failure: typeof failName === 'string' ? FAILURES[failName] : registryv1.DrillFailure.UNSPECIFIED,
      },
      { timeoutMs: 5_000 },
    );
    return {
      country,
      address,
      latency_ms: res.latencyMs,
      failure:
        res.failure === registryv1.DrillFailure.UNSPECIFIED
          ? null
          : registryv1.DrillFailure[res.failure]?.toLowerCase(),
    };
  },
};
