-- Up Migration
-- The layout of a blob's segments (crypto/segment-codec.ts): 1 raw (every blob written before this
-- migration), 2 framed (a codec byte, then the segment compressed when smaller; sealed under other
-- associated data, so the column cannot be changed without failing authentication).
ALTER TABLE jobs.job_blobs ADD COLUMN format smallint NOT NULL DEFAULT 1 CHECK (format IN (1, 2));

-- Down Migration
ALTER TABLE jobs.job_blobs DROP COLUMN format;
