-- Up Migration
-- Reserve and commit as functions over a batch of reservations: one call is one statement, so one
-- round trip and one transaction, whatever the batch size. The single Reserve and Commit are batches
-- of one: these functions are the only implementation of the ledger's rules.
--
-- Lock order, kept by every operation (these functions and the release in ledger.ts): the account
-- rows first, in (org_id, country, period) order, then the reservation rows, in reservation_id
-- order. Holders of a reservation's row lock always hold its account first (a reservation never
-- changes account), so concurrent batches, single calls and releases never wait on each other in a
-- cycle.

-- Reserve p_ids[i] for (p_orgs[i], p_countries[i]) of p_amounts[i] inputs in month p_period, for
-- every i in order. The outcome of each, in the same order:
--   ok             reserved now, or reserved or committed before with the same org, country, amount
--   quota_exceeded used + reserved + amount would pass the monthly limit (no limit set: 0)
--   id_conflict    the id was used for another org, country or amount (a release tombstone too)
--   released       the reservation was released
-- A later item sees the reservations of earlier ones: a repeated id is answered like a repeated
-- call, and a batch can never take more than the limit. Raises serialization_failure (40001) when a
-- concurrent transaction wrote one of the ids after this one read them; the caller retries.
CREATE FUNCTION quota.reserve_many(
  p_ids text[],
  p_orgs text[],
  p_countries text[],
  p_amounts bigint[],
  p_kinds smallint[],
  p_period text
) RETURNS text[]
LANGUAGE plpgsql
AS $$
DECLARE
  n int := coalesce(cardinality(p_ids), 0);
  outcomes text[] := array_fill(NULL::text, ARRAY[n]);
  -- made[first] = the item that reserved the id whose first occurrence in the batch is `first`
  made int[] := array_fill(NULL::int, ARRAY[n]);
  -- taken[account] = what earlier items of this batch reserved on the account (dense index)
  taken bigint[] := array_fill(0::bigint, ARRAY[n]);
  m int;
  expected int := 0;
  inserted int;
  it record;
BEGIN
  IF n = 0 THEN
    RETURN outcomes;
  END IF;
  IF cardinality(p_orgs) <> n OR cardinality(p_countries) <> n OR cardinality(p_amounts) <> n
     OR cardinality(p_kinds) <> n THEN
    RAISE EXCEPTION 'reserve_many: arrays of different lengths' USING ERRCODE = 'invalid_parameter_value';
  END IF;

  -- Create the accounts that are missing and lock all of them, in key order (ON CONFLICT DO UPDATE
  -- locks an existing row; WHERE false leaves it unchanged).
  INSERT INTO quota.accounts AS a (org_id, country, period)
  SELECT DISTINCT u.org, u.country, p_period FROM unnest(p_orgs, p_countries) AS u(org, country)
  ORDER BY 1, 2
  ON CONFLICT (org_id, country, period) DO UPDATE SET used = a.used WHERE false;

  -- Every item with its account's room (read under the lock) and any reservation of its id that
  -- existed before this batch.
  FOR it IN
    SELECT u.ord::int AS ord, u.org, u.country, u.amount,
           (min(u.ord) OVER (PARTITION BY u.id))::int AS first,
           (dense_rank() OVER (ORDER BY u.org, u.country))::int AS account,
           coalesce(l.monthly_limit, 0) - a.used - a.reserved AS room,
           r.org_id AS r_org, r.country AS r_country, r.amount AS r_amount, r.state AS r_state
    FROM unnest(p_ids, p_orgs, p_countries, p_amounts) WITH ORDINALITY AS u(id, org, country, amount, ord)
    JOIN quota.accounts a ON a.org_id = u.org AND a.country = u.country AND a.period = p_period
    LEFT JOIN quota.limits l ON l.org_id = u.org AND l.country = u.country
    LEFT JOIN quota.reservations r ON r.reservation_id = u.id
    ORDER BY u.ord
  LOOP
    IF it.r_state IS NOT NULL THEN
      -- Reserved before this batch: the same reservation again changes nothing.
      outcomes[it.ord] := CASE
        WHEN it.r_org <> it.org OR it.r_country <> it.country OR it.r_amount <> it.amount THEN 'id_conflict'
        WHEN it.r_state = 'released' THEN 'released'
        ELSE 'ok' END;
    ELSIF made[it.first] IS NOT NULL THEN
      -- Reserved by an earlier item of this batch.
      m := made[it.first];
      outcomes[it.ord] := CASE
        WHEN p_orgs[m] <> it.org OR p_countries[m] <> it.country OR p_amounts[m] <> it.amount THEN 'id_conflict'
        ELSE 'ok' END;
    ELSIF it.amount <= it.room - taken[it.account] THEN
      -- fits: used + reserved + amount <= limit, counting the earlier items of this batch.
      taken[it.account] := taken[it.account] + it.amount;
      made[it.first] := it.ord;
      expected := expected + 1;
      outcomes[it.ord] := 'ok';
    ELSE
      outcomes[it.ord] := 'quota_exceeded';
    END IF;
  END LOOP;

  IF expected = 0 THEN
    RETURN outcomes;
  END IF;

  -- The new reservations, in id order (two batches writing the same ids wait in the same order).
  INSERT INTO quota.reservations (reservation_id, org_id, country, period, amount, kind, state)
  SELECT p_ids[m.i], p_orgs[m.i], p_countries[m.i], p_period, p_amounts[m.i], p_kinds[m.i], 'reserved'
  FROM unnest(made) AS m(i) WHERE m.i IS NOT NULL
  ORDER BY p_ids[m.i]
  ON CONFLICT (reservation_id) DO NOTHING;
  GET DIAGNOSTICS inserted = ROW_COUNT;
  IF inserted <> expected THEN
    -- Another transaction (a release's tombstone, a reservation of another account) wrote one of
    -- these ids after the read above: the outcomes are stale. Undo everything; the caller retries.
    RAISE EXCEPTION 'reserve_many: a reservation id was written concurrently'
      USING ERRCODE = 'serialization_failure';
  END IF;

  UPDATE quota.accounts a SET reserved = a.reserved + t.amount
  FROM (
    SELECT p_orgs[m.i] AS org, p_countries[m.i] AS country, sum(p_amounts[m.i]) AS amount
    FROM unnest(made) AS m(i) WHERE m.i IS NOT NULL
    GROUP BY 1, 2
  ) t
  WHERE a.org_id = t.org AND a.country = t.country AND a.period = p_period;

  RETURN outcomes;
END;
$$;

-- Commit every reservation of p_ids: move its amount from reserved to used and write its usage
-- record, exactly once however often the id is repeated. The outcome of each, in the same order:
--   committed  committed now or before
--   not_found  no reservation has this id
--   released   the reservation was released (or never reserved and released: a tombstone)
-- Rows are looked up by reservation_id only: a condition on state would let the planner scan the
-- partial index of open reservations, which holds the dead entries of every recent commit.
CREATE FUNCTION quota.commit_many(p_ids text[]) RETURNS text[]
LANGUAGE plpgsql
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

-- Down Migration
DROP FUNCTION quota.commit_many(text[]);
DROP FUNCTION quota.reserve_many(text[], text[], text[], bigint[], smallint[], text);
