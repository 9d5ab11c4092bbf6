import type { Pool } from '@dnc/kit';
import { OrganizationStore } from '../organization-store.js';
import { AccountStore } from './accounts.js';
import { ClaimStore } from './claims.js';
import { GateFactsStore } from './gate-facts.js';
import { MaintenanceStore } from './maintenance.js';
import { PurchaseStore } from './purchases.js';

export { AccountStore, type ApiKeyRow, type KeyCredential, type OrganizationRow } from './accounts.js';
export {
  type ClaimState,
  ClaimStore,
  type KeyForm,
  type NewClaim,
  type Retention,
  type StoredClaim,
} from './claims.js';
export { Conflict, NotFound } from './errors.js';
export { type GateFacts, GateFactsStore, type KeyFacts } from './gate-facts.js';
export { MaintenanceStore } from './maintenance.js';
export { type PurchaseRow, PurchaseStore } from './purchases.js';

/** Postgres access of the admission schema, one store per aggregate. No other service reads these tables. */
export interface AdmissionStores {
  accounts: AccountStore;
  purchases: PurchaseStore;
  maintenance: MaintenanceStore;
  claims: ClaimStore;
  /** The read across accounts, purchases and maintenance that a scrub's admission decides on. */
  gate: GateFactsStore;
  /** One organization's rows (OrganizationService; the operator's key creation and revocation too). */
  organizations: OrganizationStore;
}

export function admissionStores(pool: Pool): AdmissionStores {
  return {
    accounts: new AccountStore(pool),
    purchases: new PurchaseStore(pool),
    maintenance: new MaintenanceStore(pool),
    claims: new ClaimStore(pool),
    gate: new GateFactsStore(pool),
    organizations: new OrganizationStore(pool),
  };
}
