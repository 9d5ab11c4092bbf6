-- Up Migration
-- The keys listed and counted per organization are its active ones (and its latest revoked ones, by
-- revocation time): revoked keys are kept (their prefix and history stay visible), so an organization
-- that created and revoked keys in a loop made every key creation count, and every listing read, all of
-- them (organization-store.ts).
CREATE INDEX api_keys_org_active ON admission.api_keys (org_id) WHERE revoked_at IS NULL;
CREATE INDEX api_keys_org_revoked ON admission.api_keys (org_id, revoked_at DESC) WHERE revoked_at IS NOT NULL;

-- Down Migration
DROP INDEX admission.api_keys_org_revoked;
DROP INDEX admission.api_keys_org_active;
