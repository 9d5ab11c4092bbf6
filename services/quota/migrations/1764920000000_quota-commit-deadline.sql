-- Up Migration
-- A v1 commit bounded by its caller's deadline as a whole, not wait by wait. 1764800000000 set
-- lock_timeout once for the transaction, and PostgreSQL applies it to each lock wait on its own: held on
-- an account row for most of the deadline, then on the usage table for most of it again, the commit landed
-- after its caller had answered 503 and its abort had timed out on the same row (a platform failure
-- charged; found by a review, 2026-12-04). Before each statement the commit may wait in, lock_timeout is
-- now what is left of the deadline taken at its start (none left: lock_not_available, as a lock timeout);
-- a statement_timeout set inside a statement does not bound it. The body moves into the two-argument
-- function, the one-argument one calls it without a bound; the work between waits is not bounded (its
-- COMMIT's flush neither: an exact retry replays such an answer, free).
CREATE FUNCTION quota.lock_waits_until(p_deadline timestamptz) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
  left_ms integer;
BEGIN
  IF p_deadline IS NULL THEN
    RETURN;
  END IF;
  left_ms := ceil(extract(epoch FROM p_deadline - clock_timestamp()) * 1000);
  IF left_ms <= 0 THEN
    RAISE EXCEPTION 'canceling statement due to lock timeout' USING ERRCODE = 'lock_not_available';
  END IF;
  PERFORM set_config('lock_timeout', left_ms::text || 'ms', true);
END
$$;

CREATE OR REPLACE FUNCTION quota.commit_many(p_ids text[], p_lock_timeout_ms integer) RETURNS text[]
LANGUAGE plpgsql
SET enable_seqscan = off
AS $$
DECLARE
  found_ids text[];
  released_ids text[];
  open_ids text[];
  k_orgs text[];
  k_countries text[];
  k_periods text[];
  still_open text[];
  outcomes text[];
  deadline timestamptz := CASE WHEN p_lock_timeout_ms > 0
    THEN clock_timestamp() + p_lock_timeout_ms * interval '1 millisecond' END;
BEGIN
  IF coalesce(cardinality(p_ids), 0) = 0 THEN
    RETURN ARRAY[]::text[];
  END IF;

  PERFORM quota.lock_waits_until(deadline);
  -- The reservations that exist now; one created after this read is not found (as by a Commit that
  -- arrives before its Reserve has committed). Only open ones can change: a closed state is final,
  -- and an open reservation's account never changes.
  SELECT coalesce(array_agg(r.reservation_id), ARRAY[]::text[]),
         coalesce(array_agg(r.reservation_id) FILTER (WHERE r.state = 'released'), ARRAY[]::text[]),
         coalesce(array_agg(r.reservation_id) FILTER (WHERE r.state = 'reserved'), ARRAY[]::text[]),
         array_agg(r.org_id) FILTER (WHERE r.state = 'reserved'),
         array_agg(r.country) FILTER (WHERE r.state = 'reserved'),
         array_agg(r.period) FILTER (WHERE r.state = 'reserved')
  INTO found_ids, released_ids, open_ids, k_orgs, k_countries, k_periods
  FROM quota.reservations r WHERE r.reservation_id = ANY (p_ids);

  IF cardinality(open_ids) > 0 THEN
    PERFORM quota.lock_waits_until(deadline);
    -- Lock order: the accounts of the open reservations, then the reservations.
    PERFORM 1 FROM quota.accounts a
    WHERE (a.org_id, a.country, a.period) IN (
      SELECT k.org, k.country, k.period FROM unnest(k_orgs, k_countries, k_periods) AS k(org, country, period)
    )
    ORDER BY a.org_id, a.country, a.period
    FOR UPDATE OF a;
    PERFORM quota.lock_waits_until(deadline);
    -- Under the lock, the state of each as it is now (a concurrent commit or release may have
    -- closed it since the read above).
    SELECT coalesce(array_agg(o.reservation_id) FILTER (WHERE o.state = 'reserved'), ARRAY[]::text[]),
           released_ids || coalesce(array_agg(o.reservation_id) FILTER (WHERE o.state = 'released'), ARRAY[]::text[])
    INTO still_open, released_ids
    FROM (
      SELECT r.reservation_id, r.state FROM quota.reservations r WHERE r.reservation_id = ANY (open_ids)
      ORDER BY r.reservation_id
      FOR UPDATE OF r
    ) o;

    IF cardinality(still_open) > 0 THEN
      PERFORM quota.lock_waits_until(deadline);
      WITH done AS (
        UPDATE quota.reservations r SET state = 'committed', updated_at = now()
        WHERE r.reservation_id = ANY (still_open)
        RETURNING r.reservation_id, r.org_id, r.country, r.period, r.amount, r.kind
      ), recorded AS (
        INSERT INTO quota.usage_records (reservation_id, org_id, country, period, count, kind)
        SELECT d.reservation_id, d.org_id, d.country, d.period, d.amount, d.kind FROM done d
        ORDER BY d.reservation_id
      )
      UPDATE quota.accounts a SET reserved = a.reserved - t.amount, used = a.used + t.amount
      FROM (
        SELECT d.org_id, d.country, d.period, sum(d.amount) AS amount FROM done d GROUP BY 1, 2, 3
      ) t
      WHERE a.org_id = t.org_id AND a.country = t.country AND a.period = t.period;
    END IF;
  END IF;

  SELECT array_agg(
    CASE WHEN f.id IS NULL THEN 'not_found' WHEN x.id IS NOT NULL THEN 'released' ELSE 'committed' END
    ORDER BY u.ord)
  INTO outcomes
  FROM unnest(p_ids) WITH ORDINALITY AS u(id, ord)
  LEFT JOIN unnest(found_ids) AS f(id) ON f.id = u.id
  LEFT JOIN unnest(released_ids) AS x(id) ON x.id = u.id;

  RETURN outcomes;
END;
$$;

CREATE OR REPLACE FUNCTION quota.commit_many(p_ids text[]) RETURNS text[]
LANGUAGE sql AS $$ SELECT quota.commit_many(p_ids, 0) $$;

-- Down Migration
CREATE OR REPLACE FUNCTION quota.commit_many(p_ids text[]) RETURNS text[]
LANGUAGE plpgsql
SET enable_seqscan = off
AS $$
DECLARE
  found_ids text[];
  released_ids text[];
  open_ids text[];
  k_orgs text[];
  k_countries text[];
  k_periods text[];
  still_open text[];
  outcomes text[];
BEGIN
  IF coalesce(cardinality(p_ids), 0) = 0 THEN
    RETURN ARRAY[]::text[];
  END IF;

  -- The reservations that exist now; one created after this read is not found (as by a Commit that
  -- arrives before its Reserve has committed). Only open ones can change: a closed state is final,
  -- and an open reservation's account never changes.
  SELECT coalesce(array_agg(r.reservation_id), ARRAY[]::text[]),
         coalesce(array_agg(r.reservation_id) FILTER (WHERE r.state = 'released'), ARRAY[]::text[]),
         coalesce(array_agg(r.reservation_id) FILTER (WHERE r.state = 'reserved'), ARRAY[]::text[]),
         array_agg(r.org_id) FILTER (WHERE r.state = 'reserved'),
         array_agg(r.country) FILTER (WHERE r.state = 'reserved'),
         array_agg(r.period) FILTER (WHERE r.state = 'reserved')
  INTO found_ids, released_ids, open_ids, k_orgs, k_countries, k_periods
  FROM quota.reservations r WHERE r.reservation_id = ANY (p_ids);

  IF cardinality(open_ids) > 0 THEN
    -- Lock order: the accounts of the open reservations, then the reservations.
    PERFORM 1 FROM quota.accounts a
    WHERE (a.org_id, a.country, a.period) IN (
      SELECT k.org, k.country, k.period FROM unnest(k_orgs, k_countries, k_periods) AS k(org, country, period)
    )
    ORDER BY a.org_id, a.country, a.period
    FOR UPDATE OF a;
    -- Under the lock, the state of each as it is now (a concurrent commit or release may have
    -- closed it since the read above).
    SELECT coalesce(array_agg(o.reservation_id) FILTER (WHERE o.state = 'reserved'), ARRAY[]::text[]),
           released_ids || coalesce(array_agg(o.reservation_id) FILTER (WHERE o.state = 'released'), ARRAY[]::text[])
    INTO still_open, released_ids
    FROM (
      SELECT r.reservation_id, r.state FROM quota.reservations r WHERE r.reservation_id = ANY (open_ids)
      ORDER BY r.reservation_id
      FOR UPDATE OF r
    ) o;

    IF cardinality(still_open) > 0 THEN
      WITH done AS (
        UPDATE quota.reservations r SET state = 'committed', updated_at = now()
        WHERE r.reservation_id = ANY (still_open)
        RETURNING r.reservation_id, r.org_id, r.country, r.period, r.amount, r.kind
      ), recorded AS (
        INSERT INTO quota.usage_records (reservation_id, org_id, country, period, count, kind)
        SELECT d.reservation_id, d.org_id, d.country, d.period, d.amount, d.kind FROM done d
        ORDER BY d.reservation_id
      )
      UPDATE quota.accounts a SET reserved = a.reserved - t.amount, used = a.used + t.amount
      FROM (
        SELECT d.org_id, d.country, d.period, sum(d.amount) AS amount FROM done d GROUP BY 1, 2, 3
      ) t
      WHERE a.org_id = t.org_id AND a.country = t.country AND a.period = t.period;
    END IF;
  END IF;

  SELECT array_agg(
    CASE WHEN f.id IS NULL THEN 'not_found' WHEN x.id IS NOT NULL THEN 'released' ELSE 'committed' END
    ORDER BY u.ord)
  INTO outcomes
  FROM unnest(p_ids) WITH ORDINALITY AS u(id, ord)
  LEFT JOIN unnest(found_ids) AS f(id) ON f.id = u.id
  LEFT JOIN unnest(released_ids) AS x(id) ON x.id = u.id;

  RETURN outcomes;
END;
$$;

CREATE OR REPLACE FUNCTION quota.commit_many(p_ids text[], p_lock_timeout_ms integer) RETURNS text[]
LANGUAGE plpgsql AS $$
BEGIN
  IF p_lock_timeout_ms > 0 THEN
    PERFORM set_config('lock_timeout', p_lock_timeout_ms::text || 'ms', true);
  END IF;
  RETURN quota.commit_many(p_ids);
END
$$;

DROP FUNCTION quota.lock_waits_until(timestamptz);
