import { randomUUID } from 'node:crypto';
import { create } from '@bufbuild/protobuf';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import type { ServiceImpl } from '@connectrpc/connect';
import { COUNTRY_CODES, isLiveCountry, UUID_REGEXP } from '@dnc/api-contract/limits';
import { Code, type Logger, publicError, validationError } from '@dnc/kit';
import { admissionv1 } from '@dnc/proto';
import { displayPrefix, generateApiKey } from './domain/api-key.js';
import {
  KeyIdTaken,
  KeyLimitReached,
  type OrganizationKeyRow,
  type OrganizationPurchaseRow,
  type OrganizationStore,
} from './organization-store.js';
import type { AccountStore, MaintenanceStore } from './store/index.js';

export interface OrganizationDeps {
  accounts: AccountStore;
  maintenance: MaintenanceStore;
  organizations: OrganizationStore;
  logger: Logger;
}

/** Active keys an organization may hold at once: enough for rotation across environments. */
export const MAX_ACTIVE_KEYS = 20;
export const MAX_KEY_NAME = 100;
/** Spec, item 6: es, au and sg are planned for the end of September 2026. */
export const PLANNED_FOR = '2026-09';

// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it refuses
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/;

/** Another organization's row and a missing one get this same answer. */
const notFound = () => publicError(Code.NotFound, 'not_found');

/** The caller's organization: a malformed id cannot name anything, so it is refused outright. */
function orgIdOf(value: string): string {
  if (!UUID_REGEXP.test(value)) throw validationError('org_id must be a lowercase UUID');
  return value;
}

/** A name shown to people (a key's, an organization's): trimmed, 1 to `max` characters, no control characters. */
export function displayName(value: string, max = MAX_KEY_NAME): string {
  const name = value.trim();
  if (name.length < 1 || name.length > max || CONTROL.test(name))
    throw validationError(`name must be 1 to ${max} characters without control characters`);
  return name;
}

export const keyName = (value: string): string => displayName(value);

/**
 * A new key of `orgId`, its secret returned once: at most MAX_ACTIVE_KEYS active, the caller's key id (else
 * a new one) not in use, and nothing made when `signal` ended before the commit. The dashboard's creation
 * (OrganizationService) and the operator's (AdmissionAdminService) both come here.
 */
export async function createKey(
  organizations: OrganizationStore,
  orgId: string,
  fields: { keyId: string; name: string },
  signal?: AbortSignal,
): Promise<{ key: OrganizationKeyRow; apiKey: string }> {
  if (fields.keyId && !UUID_REGEXP.test(fields.keyId))
    throw validationError('key_id must be a lowercase UUID');
  const secret = generateApiKey();
  let key: OrganizationKeyRow | undefined;
  try {
    key = await organizations.createKey(
      orgId,
      { ...fields, keyId: fields.keyId || randomUUID(), publicId: secret.publicId, digest: secret.digest },
      MAX_ACTIVE_KEYS,
      signal,
    );
  } catch (error) {
    if (error instanceof KeyLimitReached)
      throw publicError(Code.FailedPrecondition, 'conflict', {
        message: `At most ${MAX_ACTIVE_KEYS} keys are active at once; revoke one first.`,
      });
    if (error instanceof KeyIdTaken)
      throw publicError(Code.FailedPrecondition, 'conflict', { message: 'The key id is in use.' });
    throw error;
  }
  if (!key) throw notFound();
  return { key, apiKey: secret.apiKey };
}

function keyMessage(k: OrganizationKeyRow) {
  return create(admissionv1.OrganizationKeySchema, {
    keyId: k.keyId,
    name: k.name,
    prefix: displayPrefix(k.publicId),
    createdAt: timestampFromDate(k.createdAt),
    ...(k.lastUsedAt ? { lastUsedAt: timestampFromDate(k.lastUsedAt) } : {}),
    ...(k.revokedAt ? { revokedAt: timestampFromDate(k.revokedAt) } : {}),
  });
}

export function purchaseStage(p: { status: string; activated: boolean }): admissionv1.PurchaseStage {
  if (p.status === 'pending_payment') return admissionv1.PurchaseStage.PENDING_PAYMENT;
  if (p.status === 'lapsed') return admissionv1.PurchaseStage.LAPSED;
  return p.activated ? admissionv1.PurchaseStage.ACTIVE : admissionv1.PurchaseStage.ACTIVATION_PENDING;
}

function purchaseMessage(p: OrganizationPurchaseRow) {
  const at = (d: Date | null) => (d ? timestampFromDate(d) : undefined);
  return create(admissionv1.OrganizationPurchaseSchema, {
    purchaseId: p.purchaseId,
    country: p.country,
    stage: purchaseStage(p),
    monthlyQuota: BigInt(p.monthlyQuota),
    createdAt: timestampFromDate(p.createdAt),
    paidAt: at(p.paidAt),
    activatedAt: at(p.activatedAt),
    lapsedAt: at(p.lapsedAt),
  });
}

/** OrganizationService: one organization's keys, purchases and the country catalog. */
export function organizationService(
  deps: OrganizationDeps,
): ServiceImpl<typeof admissionv1.OrganizationService> {
  const { accounts, maintenance, organizations } = deps;
  return {
    async getOrganization(req) {
      const org = await accounts.organization(orgIdOf(req.orgId));
      if (!org) throw notFound();
      return {
        orgId: org.orgId,
        name: org.name,
        suspended: org.suspended,
        activationComplete: org.activationComplete,
      };
    },

    async listKeys(req) {
      const keys = await organizations.listKeys(orgIdOf(req.orgId));
      return { keys: keys.map(keyMessage) };
    },

    async createKey(req, ctx) {
      const orgId = orgIdOf(req.orgId);
      const name = keyName(req.name);
      const created = await createKey(organizations, orgId, { keyId: req.keyId, name }, ctx.signal);
      deps.logger.info({ orgId, keyId: created.key.keyId }, 'API key created');
      return { key: keyMessage(created.key), apiKey: created.apiKey };
    },

    async revokeKey(req) {
      const orgId = orgIdOf(req.orgId);
      if (!UUID_REGEXP.test(req.keyId)) throw notFound();
      const revoked = await organizations.revokeKey(orgId, req.keyId);
      if (!revoked) throw notFound();
      if (revoked.revokedNow) deps.logger.info({ orgId, keyId: revoked.key.keyId }, 'API key revoked');
      return { key: keyMessage(revoked.key), revokedNow: revoked.revokedNow };
    },

    async listPurchases(req) {
      const purchases = await organizations.listPurchases(orgIdOf(req.orgId));
      return { purchases: purchases.map(purchaseMessage) };
    },

    async getCatalog() {
      const windows = await maintenance.maintenanceWindows();
      const now = Date.now();
      return {
        countries: COUNTRY_CODES.map((country) => {
          const until = windows.get(country);
          return create(admissionv1.CatalogCountrySchema, {
            country,
            coverage: isLiveCountry(country) ? admissionv1.Coverage.LIVE : admissionv1.Coverage.PLANNED,
            plannedFor: isLiveCountry(country) ? '' : PLANNED_FOR,
            ...(until && until.getTime() > now ? { maintenanceUntil: timestampFromDate(until) } : {}),
          });
        }),
      };
    },
  };
}
