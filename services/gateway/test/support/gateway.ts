import { createLogger, HealthState, Registry } from '@dnc/kit';
import { type AppDeps, buildApp } from '../../src/app.js';
import { gatewayConfig } from '../../src/config.js';
import { inMemoryUpstream, type Script } from './upstream.js';

/** The gateway's app (not listening) before in-memory services answering `script`; `env` over its defaults. */
export async function testGateway(
  script: Script,
  env: Record<string, string> = {},
  deps: Pick<AppDeps, 'stopping'> = {},
) {
  const u = inMemoryUpstream(script);
  const logger = createLogger('gateway-test', 'silent');
  const app = await buildApp({
    config: gatewayConfig.parse({
      DNC_FINGERPRINT_SECRET: 'test-secret-0123456789',
      DNC_PUBLIC_BASE_URL: 'https://api.example.test',
      ...env,
    }),
    upstream: u.upstream,
    health: new HealthState(logger),
    logger,
    metrics: new Registry(),
    ...deps,
  });
  return { ...u, app };
}
