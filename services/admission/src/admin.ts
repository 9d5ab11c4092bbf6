import { create } from '@bufbuild/protobuf';
import { timestampDate, timestampFromDate } from '@bufbuild/protobuf/wkt';
import type { Client, ServiceImpl } from '@connectrpc/connect';
import {
  COUNTRY_CODES,
  COUNTRY_CODES_MESSAGE,
  type CountryCode,
  isCountryCode,
  isLiveCountry,
  LIMITS,
  LIVE_COUNTRIES,
} from '@dnc/api-contract/limits';
import { type AdapterDirectory, Code, type Logger, publicError, validationError } from '@dnc/kit';
import { admissionv1, type quotav1 } from '@dnc/proto';
import { displayPrefix } from './domain/api-key.js';
import { ACTIVATED_ON_PAYMENT } from './domain/countries.js';
import { createKey, displayName } from './organization.js';
import type { OrganizationStore } from './organization-store.js';
import { requireUuid } from './public-errors.js';
import {
  type AccountStore,
  type ApiKeyRow,
  Conflict,
  type MaintenanceStore,
  NotFound,
  type OrganizationRow,
  type PurchaseRow,
  type PurchaseStore,
} from './store/index.js';

export interface AdminDeps {
  accounts: AccountStore;
  organizations: OrganizationStore;
  purchases: PurchaseStore;
  maintenance: MaintenanceStore;
  directory: AdapterDirectory;
  quotaAdmin: Client<typeof quotav1.QuotaAdminService>;
  logger: Logger;
  defaultMonthlyQuota: number;
  /**
   * Publish the country's maintenance window as PostgreSQL has it now to KV dnc_country_status, where
   * the v2 workers read it (CountryStatusPublisher.publish); rejects unless it reached the bucket.
   */
  publishCountryStatus: (country: string) => Promise<void>;
}

const STATUS: Record<PurchaseRow['status'], admissionv1.PurchaseStatus> = {
  pending_payment: admissionv1.PurchaseStatus.PENDING_PAYMENT,
  active: admissionv1.PurchaseStatus.ACTIVE,
  lapsed: admissionv1.PurchaseStatus.LAPSED,
};

function country(value: string): CountryCode {
  if (!isCountryCode(value)) throw validationError(COUNTRY_CODES_MESSAGE);
  return value;
}

function organization(o: OrganizationRow) {
  return create(admissionv1.OrganizationSchema, {
    orgId: o.orgId,
    name: o.name,
    suspended: o.suspended,
    activationComplete: o.activationComplete,
    rateLimit: o.rateLimit ?? 0,
    createdAt: timestampFromDate(o.createdAt),
  });
}

function apiKey(k: ApiKeyRow) {
  return create(admissionv1.ApiKeySchema, {
    keyId: k.keyId,
    orgId: k.orgId,
    prefix: displayPrefix(k.publicId),
    createdAt: timestampFromDate(k.createdAt),
    ...(k.revokedAt ? { revokedAt: timestampFromDate(k.revokedAt) } : {}),
  });
}

function purchase(p: PurchaseRow) {
  return create(admissionv1.PurchaseSchema, {
    purchaseId: p.purchaseId,
    orgId: p.orgId,
    country: p.country,
    status: STATUS[p.status],
    activated: p.activated,
    monthlyQuota: BigInt(p.monthlyQuota),
  });
}

/** Store errors an operator can act on become NotFound / FailedPrecondition with a plain message. */
async function operator<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof NotFound) throw publicError(Code.NotFound, 'not_found', { message: error.message });
    if (error instanceof Conflict)
      throw publicError(Code.FailedPrecondition, 'conflict', { message: error.message });
    throw error;
  }
}

/** The longest organization name. */
const MAX_ORG_NAME = 200;

/** The operator surface used by `dnc-admin`, one part per aggregate. */
export function admissionAdminService(
  deps: AdminDeps,
): ServiceImpl<typeof admissionv1.AdmissionAdminService> {
  return {
    ...organizationMethods(deps),
    ...apiKeyMethods(deps),
    ...purchaseMethods(deps),
    ...countryMethods(deps),
  };
}

type Methods<K extends keyof ServiceImpl<typeof admissionv1.AdmissionAdminService>> = Pick<
  ServiceImpl<typeof admissionv1.AdmissionAdminService>,
  K
>;

function organizationMethods(
  deps: AdminDeps,
): Methods<
  'createOrganization' | 'suspendOrganization' | 'reinstateOrganization' | 'setRateLimit' | 'setActivation'
> {
  const { accounts } = deps;
  return {
    async createOrganization(req) {
      // No control characters (a review, 2026-12-05): a NUL failed as a bare internal error, and a newline
      // or an escape sequence was stored and shown to the organization's people.
      const name = displayName(req.name, MAX_ORG_NAME);
      // A caller's id makes a retry safe (CreateOrganizationRequest.org_id).
      const chosen = req.orgId ? requireUuid(req.orgId, 'org_id') : undefined;
      const orgId = await operator(() =>
        accounts.createOrganization(name, req.activationComplete ?? true, chosen),
      );
      deps.logger.info({ orgId }, 'organization created');
      return { orgId };
    },
    async suspendOrganization(req) {
      const org = await operator(() =>
        accounts.updateOrganization(requireUuid(req.orgId, 'org_id'), { suspended: true }),
      );
      return { organization: organization(org) };
    },
    async reinstateOrganization(req) {
      const org = await operator(() =>
        accounts.updateOrganization(requireUuid(req.orgId, 'org_id'), { suspended: false }),
      );
      return { organization: organization(org) };
    },
    async setRateLimit(req) {
      const { minRateLimit, maxRateLimit } = LIMITS;
      if (!Number.isInteger(req.limit) || req.limit < minRateLimit || req.limit > maxRateLimit)
        throw validationError(`limit must be an integer from ${minRateLimit} to ${maxRateLimit}`);
      const org = await operator(() =>
        accounts.updateOrganization(requireUuid(req.orgId, 'org_id'), { rateLimit: req.limit }),
      );
      return { organization: organization(org) };
    },
    async setActivation(req) {
      const org = await operator(() =>
        accounts.updateOrganization(requireUuid(req.orgId, 'org_id'), { activationComplete: req.complete }),
      );
      return { organization: organization(org) };
    },
  };
}

function apiKeyMethods(deps: AdminDeps): Methods<'createApiKey' | 'revokeApiKey' | 'listApiKeys'> {
  const { accounts, organizations } = deps;
  return {
    async createApiKey(req, ctx) {
      const orgId = requireUuid(req.orgId, 'org_id');
      // Operator keys have no name. With the dashboard's rules: see CreateApiKeyRequest.
      const { key, apiKey } = await createKey(
        organizations,
        orgId,
        { keyId: req.keyId, name: '' },
        ctx.signal,
      );
      deps.logger.info({ orgId, keyId: key.keyId }, 'API key created');
      return { keyId: key.keyId, apiKey };
    },
    async revokeApiKey(req) {
      const keyId = requireUuid(req.keyId, 'key_id');
      let key: ApiKeyRow;
      if (req.orgId) {
        // After any creation of a key of the organization still in flight (RevokeApiKeyRequest.org_id).
        const orgId = requireUuid(req.orgId, 'org_id');
        const revoked = await organizations.revokeKey(orgId, keyId);
        if (!revoked) throw publicError(Code.NotFound, 'not_found', { message: 'API key not found' });
        key = { ...revoked.key, orgId };
      } else key = await operator(() => accounts.revokeApiKey(keyId));
      deps.logger.info({ keyId: key.keyId }, 'API key revoked');
      return { apiKey: apiKey(key) };
    },
    async listApiKeys(req) {
      const keys = await accounts.listApiKeys(requireUuid(req.orgId, 'org_id'));
      return { keys: keys.map(apiKey) };
    },
  };
}

/** Purchases move pending_payment -> active -> lapsed; a country is activated at payment or later. */
function purchaseMethods(
  deps: AdminDeps,
): Methods<'createPurchase' | 'payPurchase' | 'activatePurchase' | 'lapsePurchase'> {
  const { accounts, purchases } = deps;
  return {
    async createPurchase(req) {
      const orgId = requireUuid(req.orgId, 'org_id');
      const code = country(req.country);
      if (!isLiveCountry(code)) {
        throw publicError(Code.PermissionDenied, 'country_not_in_plan', {
          message: `${code} is a technical code only and cannot be purchased; live countries: ${LIVE_COUNTRIES.join(', ')}`,
        });
      }
      if (req.monthlyQuota > BigInt(Number.MAX_SAFE_INTEGER))
        throw validationError('monthly quota is too large');
      const quota = req.monthlyQuota > 0n ? Number(req.monthlyQuota) : deps.defaultMonthlyQuota;
      if (!(await accounts.organization(orgId)))
        throw publicError(Code.NotFound, 'not_found', { message: 'organization not found' });
      const p = await operator(() => purchases.createPurchase(orgId, code, quota));
      // The purchase comes with its quota: the ledger's limit for (org, country).
      await deps.quotaAdmin.setLimit({ orgId, country: code, limit: BigInt(quota) });
      return { purchase: purchase(p) };
    },
    async payPurchase(req) {
      const purchaseId = requireUuid(req.purchaseId, 'purchase_id');
      const current = await operator(() => purchases.purchase(purchaseId));
      const activated =
        current.activated || (ACTIVATED_ON_PAYMENT as readonly string[]).includes(current.country);
      // The purchase's quota in the ledger before it is paid, again: CreatePurchase stores the purchase,
      // then sets the limit, and a limit that failed there (quota down) cannot be set by creating the
      // purchase again (one open purchase per country). Without this the paid country answered
      // customer_quota_exceeded for everything (no limit: 0), or kept an earlier purchase's limit.
      if (current.status === 'pending_payment') {
        await deps.quotaAdmin.setLimit({
          orgId: current.orgId,
          country: current.country,
          limit: BigInt(current.monthlyQuota),
        });
      }
      const p = await operator(() =>
        purchases.transitionPurchase(purchaseId, ['pending_payment'], { status: 'active', activated }),
      );
      return { purchase: purchase(p) };
    },
    async activatePurchase(req) {
      const p = await operator(() =>
        purchases.transitionPurchase(requireUuid(req.purchaseId, 'purchase_id'), ['active'], {
          activated: true,
        }),
      );
      return { purchase: purchase(p) };
    },
    async lapsePurchase(req) {
      const p = await operator(() =>
        purchases.transitionPurchase(
          requireUuid(req.purchaseId, 'purchase_id'),
          ['pending_payment', 'active'],
          {
            status: 'lapsed',
          },
        ),
      );
      return { purchase: purchase(p) };
    },
  };
}

/**
 * The change is recorded (admission refuses the country at once), but the v2 workers learn of it only
 * from the bucket: success is answered only once it is there. Otherwise a retryable Unavailable: the
 * same command again publishes it (both are idempotent), and admission republishes every country's
 * status periodically (CountryStatusPublisher). Found by two reviews (2026-12-05): a failed publish was
 * logged and answered OK, and the workers never saw the window (or kept failing a cleared country).
 */
async function published(deps: AdminDeps, code: string, what: 'window' | 'clear'): Promise<void> {
  try {
    await deps.publishCountryStatus(code);
  } catch (err) {
    deps.logger.warn({ err, country: code }, 'country status not published');
    throw publicError(Code.Unavailable, 'platform_failure', {
      retryAfterSeconds: 1,
      message: `the maintenance ${what} of ${code} is recorded but not yet published to the job workers (${err instanceof Error ? err.message : String(err)}); retry the same command, it is idempotent`,
    });
  }
}

/** Maintenance windows and the country catalog with each country's adapter as discovery shows it. */
function countryMethods(deps: AdminDeps): Methods<'setMaintenance' | 'clearMaintenance' | 'listCountries'> {
  const { maintenance } = deps;

  async function countryStatus(code: string, windows?: Map<string, Date>) {
    const until = windows ? windows.get(code) : await maintenance.maintenanceUntil(code);
    const serving = deps.directory.instances(code).filter((e) => e.status === 'serving');
    const any = serving[0] ?? deps.directory.instances(code)[0];
    return create(admissionv1.CountryStatusSchema, {
      country: code,
      live: isLiveCountry(code),
      ...(until && until.getTime() > Date.now() ? { maintenanceUntil: timestampFromDate(until) } : {}),
      adapterServing: serving.length > 0,
      adapterAddress: any?.address ?? '',
      adapterAdminAddress: any?.admin_address ?? '',
      adapterVersion: any?.version ?? '',
    });
  }

  return {
    async setMaintenance(req) {
      const code = country(req.country);
      if (!req.until) throw validationError('until is required');
      const until = timestampDate(req.until);
      if (until.getTime() <= Date.now()) throw validationError('until must be in the future');
      await maintenance.setMaintenance(code, until);
      await published(deps, code, 'window');
      return { countryStatus: await countryStatus(code) };
    },
    async clearMaintenance(req) {
      const code = country(req.country);
      await maintenance.clearMaintenance(code);
      await published(deps, code, 'clear');
      return { countryStatus: await countryStatus(code) };
    },
    async listCountries() {
      const windows = await maintenance.maintenanceWindows();
      return { countries: await Promise.all(COUNTRY_CODES.map((c) => countryStatus(c, windows))) };
    },
  };
}
