-- Up Migration
-- A v1 commit bounded by its caller's deadline. Held on a lock (an account row or the usage table locked
-- by a long transaction, a migration), `commit_many` committed whenever the lock went, after its caller
-- had answered 503 and its abort had timed out on the same lock: a platform failure charged. Every lock
-- wait of this commit now ends by `p_lock_timeout_ms` (local to the transaction; 0: no bound): the commit
-- then fails and changes nothing, and its caller's abort releases the reservation.
CREATE FUNCTION quota.commit_many(p_ids text[], p_lock_timeout_ms integer) RETURNS text[]
LANGUAGE plpgsql AS $$
BEGIN
  IF p_lock_timeout_ms > 0 THEN
    PERFORM set_config('lock_timeout', p_lock_timeout_ms::text || 'ms', true);
  END IF;
  RETURN quota.commit_many(p_ids);
END
$$;

-- Down Migration
DROP FUNCTION quota.commit_many(text[], integer);
