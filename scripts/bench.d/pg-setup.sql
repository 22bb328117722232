-- PostgreSQL references for scripts/bench: a bare sequence, and Instagram's ID function as
-- SEEDS.md describes it (written here from that description).

-- The bare reference: one nextval per call.
CREATE SEQUENCE IF NOT EXISTS s;

-- Instagram's scheme: 41 bits of milliseconds since a custom epoch, 13 bits of logical shard,
-- 10 bits of a per-shard sequence (mod 1024); the shard is user_id % 2000. Instagram ran one
-- schema (and so one sequence) per logical shard; one sequence here costs the same per call.
CREATE SEQUENCE IF NOT EXISTS insta_id_seq;

CREATE OR REPLACE FUNCTION insta_next_id(user_id bigint, OUT result bigint) AS $$
DECLARE
    -- Instagram's epoch, 2011-08-24T21:07:01.721Z, in ms since 1970.
    epoch_ms  bigint := 1314220021721;
    now_ms    bigint;
    seq_id    bigint;
    shard_id  int := user_id % 2000;
BEGIN
    SELECT nextval('insta_id_seq') % 1024 INTO seq_id;
    -- clock_timestamp(), not now(): now() is frozen for the whole transaction.
    now_ms := floor(extract(epoch FROM clock_timestamp()) * 1000);
    result := (now_ms - epoch_ms) << 23;
    result := result | (shard_id::bigint << 10);
    result := result | seq_id;
END;
$$ LANGUAGE plpgsql;
