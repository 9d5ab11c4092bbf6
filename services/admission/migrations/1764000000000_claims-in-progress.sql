-- Up Migration
-- The claim reconciler (issue 14) reads the claims still in progress past their bound, oldest first.
CREATE INDEX idempotency_records_in_progress ON admission.idempotency_records (claimed_at)
  WHERE state = 'in_progress';

-- Down Migration
DROP INDEX admission.idempotency_records_in_progress;
