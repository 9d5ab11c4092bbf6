import { create } from '@bufbuild/protobuf';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import type { ConnectRouter, HandlerContext, ServiceImpl } from '@connectrpc/connect';
import { isPhoneWithinLimit } from '@dnc/api-contract/limits';
import {
  CALLER,
  Code,
  ConnectError,
  checkResponse,
  PHONE_LIST_HEADER,
  publicError,
  validationError,
} from '@dnc/kit';
import { registryv1 } from '@dnc/proto';
import type { Logger } from 'pino';
import { checkPhones } from './check.js';
import { type CheckRequestWire, checkMethod, checkPhonesOf } from './check-request.js';
import { loadSnapshot } from './load-route.js';
import type { AdapterMetrics } from './metrics.js';
import type { Drill, DrillFailure, DrillProvider } from './providers/drill-provider.js';
import { ProviderError, type ProviderState } from './providers/provider.js';
import type { RegistryStore } from './store/registry-store.js';
import { isRegistryKey, MAX_PHONE_LENGTH, type Normalizer } from './validation.js';

/** Inputs per Check call (the contract's sizing). */
export const MAX_CHECK_BATCH = 100_000;

export interface AdapterDeps {
  country: string;
  version: string;
  normalizer: Normalizer;
  /** The provider chain: drills around the local index or the remote client. */
  provider: DrillProvider;
  /** Present with the local provider: the registry copy that Load writes. */
  store?: RegistryStore;
  /** Called after a load committed, so this replica swaps at once (others follow within a poll). */
  onSnapshotCommitted?: () => Promise<void>;
  drillsEnabled: boolean;
  /** How long a load waits for its uploader's next chunk (DNC_LOAD_CHUNK_IDLE_MS). */
  loadChunkIdleMs: number;
  /** Oldest snapshot answered from (seconds); 0 = no limit. Reported by GetRegistryStatus. */
  maxAgeSeconds: number;
  metrics: AdapterMetrics;
  logger: Logger;
}

const STATUS: Record<ProviderState['status'], registryv1.AdapterStatus> = {
  serving: registryv1.AdapterStatus.SERVING,
  maintenance: registryv1.AdapterStatus.MAINTENANCE,
  unavailable: registryv1.AdapterStatus.UNAVAILABLE,
};

type AdapterImpl = ServiceImpl<typeof registryv1.RegistryAdapterService>;

/** Check (its request read as `CheckRequestWire`, check-request.ts) and Describe. */
export function registryAdapterService(deps: AdapterDeps): {
  check(req: CheckRequestWire, ctx: HandlerContext): Promise<registryv1.CheckResponse>;
  describe: AdapterImpl['describe'];
} {
  const { country, metrics } = deps;
  return {
    async check(req, ctx) {
      // This adapter reads `phone_list`: said on every answer, errors included (kit checkAt).
      ctx.responseHeader.set(PHONE_LIST_HEADER, '1');
      if (req.country !== country) throw validationError(`this adapter serves country ${country}`);
      const json = isJson(ctx.requestHeader.get('content-type'));
      const phones = checkPhonesOf(req, json);
      if (phones.length > MAX_CHECK_BATCH)
        throw validationError(`at most ${MAX_CHECK_BATCH} phones per call`);
      for (const phone of phones) {
        if (!isPhoneWithinLimit(phone))
          throw validationError(`each phone is at most ${MAX_PHONE_LENGTH} characters`);
      }
      if (ctx.values.get(CALLER) === 'conformance') refuseRegistryReads(phones, deps.normalizer);
      const end = metrics.checkDuration.startTimer({ country });
      try {
        const answer = await checkPhones(phones, deps.normalizer, deps.provider, ctx.signal);
        metrics.countOutcomes(answer.outcomes);
        const response = {
          outcomes: answer.outcomes,
          snapshotId: answer.snapshotId,
          snapshotTime: answer.snapshotTime ? timestampFromDate(answer.snapshotTime) : undefined,
        };
        // The pre-encoded outcomes are binary-only (raw field bytes): JSON has none of them.
        if (json)
          return create(registryv1.CheckResponseSchema, {
            ...response,
            outcomes: Array.from(answer.outcomes),
          });
        return checkResponse(response);
      } catch (error) {
        throw checkFailure(error, ctx, deps);
      } finally {
        end();
      }
    },

    describe() {
      const state = deps.provider.state();
      return {
        country,
        adapterVersion: deps.version,
        status: STATUS[state.status],
        maintenanceUntil: state.maintenanceUntil ? timestampFromDate(state.maintenanceUntil) : undefined,
        snapshotId: state.snapshotId,
        snapshotTime: state.snapshotTime ? timestampFromDate(state.snapshotTime) : undefined,
        registrySize: BigInt(state.registrySize),
      };
    },
  };
}

/**
 * The `conformance` identity (a chart's `helm test` Pod, whose certificate every adapter release keeps)
 * checks that an adapter answers: a Check of inputs that are not numbers. It may call every adapter, so it
 * is never answered about a number the registry could hold: a batch with any input the country's rules
 * read as a number is refused whole, before any lookup (no registry read without quota or audit).
 */
function refuseRegistryReads(phones: readonly string[], normalizer: Normalizer): void {
  if (phones.some((phone) => isRegistryKey(normalizer.normalize(phone))))
    throw new ConnectError('conformance checks inputs that are not numbers only', Code.PermissionDenied);
}

/** A request in JSON (Connect `application/json`, gRPC `+json`) rather than binary protobuf. */
const isJson = (contentType: string | null) => contentType?.includes('json') === true;

/** Map a failed Check to its public form; provider details never cross the boundary. */
function checkFailure(error: unknown, ctx: HandlerContext, deps: AdapterDeps): ConnectError {
  if (ctx.signal.aborted) {
    // The caller's deadline passed or it went away: not a provider failure.
    const ce = ConnectError.from(ctx.signal.reason ?? error);
    return ce.code === Code.Canceled ? ce : new ConnectError('deadline exceeded', Code.DeadlineExceeded);
  }
  const errorClass = error instanceof ProviderError ? error.errorClass : 'unavailable';
  deps.metrics.providerErrors.inc({ country: deps.country, class: errorClass });
  if (!(error instanceof ProviderError)) deps.logger.error({ err: error }, 'registry lookup failed');
  const retryAfterSeconds = error instanceof ProviderError ? error.retryAfterSeconds : 5;
  return publicError(
    Code.Unavailable,
    errorClass === 'maintenance' ? 'country_service_maintenance' : 'country_service_temporarily_unavailable',
    { retryAfterSeconds, country: deps.country },
  );
}

const DRILL_FAILURES: Record<registryv1.DrillFailure, DrillFailure> = {
  [registryv1.DrillFailure.UNSPECIFIED]: 'none',
  [registryv1.DrillFailure.UNAVAILABLE]: 'unavailable',
  [registryv1.DrillFailure.MAINTENANCE]: 'maintenance',
};

function drillToProto(drill: Drill) {
  const failure =
    drill.failure === 'maintenance'
      ? registryv1.DrillFailure.MAINTENANCE
      : drill.failure === 'unavailable'
        ? registryv1.DrillFailure.UNAVAILABLE
        : registryv1.DrillFailure.UNSPECIFIED;
  return { latencyMs: drill.latencyMs, failure };
}

export function registryAdminService(deps: AdapterDeps): ServiceImpl<typeof registryv1.RegistryAdminService> {
  const { country } = deps;
  return {
    load: (requests, ctx) => loadSnapshot(deps, requests, ctx.signal),

    async getRegistryStatus() {
      if (deps.store) {
        const current = await deps.store.current();
        return {
          country,
          snapshotId: current?.id ?? '',
          snapshotTime: current ? timestampFromDate(current.time) : undefined,
          registrySize: BigInt(current?.size ?? 0),
          maxAgeSeconds: BigInt(deps.maxAgeSeconds),
        };
      }
      const state = deps.provider.state();
      return {
        country,
        snapshotId: state.snapshotId,
        snapshotTime: state.snapshotTime ? timestampFromDate(state.snapshotTime) : undefined,
        registrySize: BigInt(state.registrySize),
        maxAgeSeconds: BigInt(deps.maxAgeSeconds),
      };
    },

    setDrill(req) {
      if (!deps.drillsEnabled) {
        throw new ConnectError(
          'drills are disabled on this adapter (DNC_ENABLE_DRILLS)',
          Code.PermissionDenied,
        );
      }
      if (req.clear) {
        deps.provider.set({ latencyMs: 0, failure: 'none' });
      } else {
        if (req.latencyMs > 120_000)
          throw new ConnectError('latency_ms is at most 120000', Code.InvalidArgument);
        deps.provider.set({ latencyMs: req.latencyMs, failure: DRILL_FAILURES[req.failure] ?? 'none' });
      }
      const drill = deps.provider.current;
      deps.logger.warn({ latency_ms: drill.latencyMs, failure: drill.failure }, 'drill set');
      return drillToProto(drill);
    },
  };
}

/**
 * The data plane (Check and Describe, for the gateway and the workers) and the admin listener
 * (Load, status, drills, and Describe for `dnc-admin registry status`: operator only, audited).
 */
export function adapterRoutes(deps: AdapterDeps) {
  const adapter = registryAdapterService(deps);
  return {
    data: (router: ConnectRouter) => {
      // Check with its own request descriptor (check-request.ts); Connect routes it by the same path.
      router.rpc(
        checkMethod as typeof registryv1.RegistryAdapterService.method.check,
        adapter.check as never,
      );
      router.rpc(registryv1.RegistryAdapterService.method.describe, adapter.describe);
    },
    admin: (router: ConnectRouter) => {
      router.service(registryv1.RegistryAdminService, registryAdminService(deps));
      // Describe alone: the whole service would answer Check with connect's stub, through the audit
      // (two rows a call from any identity allowed to Check).
      router.rpc(registryv1.RegistryAdapterService.method.describe, adapter.describe);
    },
  };
}
