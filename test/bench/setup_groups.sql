-- Consumer groups: offsets completed out of order (claim_offset) and the
-- generation check (5-argument advance, fence), each beside what a competent user
-- would write by hand.  Run again, it starts over (the cpu section loads it too).
--
--   grp_inbox      the extension's partitions: topic 'swap' (partitions 0..7, one
--                  per pgbench client) and 'shared' (0..1, several clients each),
--                  for claim_offset; 'plain' for the 4-argument advance, 'fenced'
--                  for the 5-argument one and 'claims' for fence + claim, both held
--                  by generation 1 (partitions 0..7).
--   grp_claims     the inbox of the fenced and unfenced claims.
--   grp_hand_wm, grp_hand_done
--                  the hand-written out-of-order offsets: a watermark row per
--                  partition, a row per offset completed above it, and
--                  hand_claim_offset below.
--   grp_hand_pos   the hand-written in-order offsets and generations: topics
--                  'plain', 'fenced' and 'claims', as in grp_inbox.
--   grp_hand_claims  the hand-written fenced claims.
-- Each variant applies its messages to its own 1000 accounts, whose effects column
-- counts the messages applied, so that the run can check each was applied once.
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
DROP TABLE IF EXISTS grp_inbox, grp_claims, grp_hand_wm, grp_hand_done, grp_hand_pos,
    grp_hand_claims, grp_offset_ext_accounts, grp_offset_hand_accounts,
    grp_advance_accounts, grp_advance_gen_accounts, grp_advance_hand_accounts,
    grp_advance_hand_gen_accounts, grp_claim_accounts, grp_fence_hand_accounts;
DROP SEQUENCE IF EXISTS grp_ext_seq_0, grp_ext_seq_1, grp_hand_seq_0, grp_hand_seq_1;
DROP FUNCTION IF EXISTS hand_claim_offset(text, int, bigint);

SELECT inbox.create_inbox('grp_inbox');
SELECT inbox.create_inbox('grp_claims');
-- Fenced partitions: generation 1 holds them, as after the group's first rebalance.
SELECT inbox.fence('grp_inbox', t, p, 1)
  FROM unnest(ARRAY['fenced', 'claims']) t, generate_series(0, 7) p;

CREATE TABLE grp_offset_ext_accounts (id int PRIMARY KEY, balance bigint NOT NULL, effects bigint NOT NULL);
INSERT INTO grp_offset_ext_accounts SELECT g, 0, 0 FROM generate_series(1, 1000) g;
CREATE TABLE grp_offset_hand_accounts (LIKE grp_offset_ext_accounts INCLUDING ALL);
CREATE TABLE grp_advance_accounts (LIKE grp_offset_ext_accounts INCLUDING ALL);
CREATE TABLE grp_advance_gen_accounts (LIKE grp_offset_ext_accounts INCLUDING ALL);
CREATE TABLE grp_advance_hand_accounts (LIKE grp_offset_ext_accounts INCLUDING ALL);
CREATE TABLE grp_advance_hand_gen_accounts (LIKE grp_offset_ext_accounts INCLUDING ALL);
-- Both extension claim variants (fenced or not) write grp_claims and these.
CREATE TABLE grp_claim_accounts (LIKE grp_offset_ext_accounts INCLUDING ALL);
CREATE TABLE grp_fence_hand_accounts (LIKE grp_offset_ext_accounts INCLUDING ALL);
INSERT INTO grp_offset_hand_accounts SELECT * FROM grp_offset_ext_accounts;
INSERT INTO grp_advance_accounts SELECT * FROM grp_offset_ext_accounts;
INSERT INTO grp_advance_gen_accounts SELECT * FROM grp_offset_ext_accounts;
INSERT INTO grp_advance_hand_accounts SELECT * FROM grp_offset_ext_accounts;
INSERT INTO grp_advance_hand_gen_accounts SELECT * FROM grp_offset_ext_accounts;
INSERT INTO grp_claim_accounts SELECT * FROM grp_offset_ext_accounts;
INSERT INTO grp_fence_hand_accounts SELECT * FROM grp_offset_ext_accounts;

-- The dispatcher of the 'shared' partitions: the next offset to hand to a worker.
CREATE SEQUENCE grp_ext_seq_0 MINVALUE 0 START 0;
CREATE SEQUENCE grp_ext_seq_1 MINVALUE 0 START 0;
CREATE SEQUENCE grp_hand_seq_0 MINVALUE 0 START 0;
CREATE SEQUENCE grp_hand_seq_1 MINVALUE 0 START 0;

-- Out-of-order offsets by hand: every offset up to the watermark is applied (-1:
-- none yet), and so is every offset in grp_hand_done (all above it).
CREATE TABLE grp_hand_wm (
    topic text NOT NULL,
    "partition" int NOT NULL,
    watermark bigint NOT NULL DEFAULT -1,
    advanced_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (topic, "partition")
);
CREATE TABLE grp_hand_done (
    topic text NOT NULL,
    "partition" int NOT NULL,
    "offset" bigint NOT NULL,
    completed_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (topic, "partition", "offset")
);
INSERT INTO grp_hand_wm (topic, "partition")
SELECT 'swap', g FROM generate_series(0, 7) g
UNION ALL SELECT 'shared', g FROM generate_series(0, 1) g;

-- What claim_offset does, in PL/pgSQL, for READ COMMITTED (each statement reads
-- what is committed when it starts): true if offset o of the partition is fresh,
-- recorded in the caller's transaction; false if already applied.
--  1. At or below the watermark: applied.
--  2. Otherwise the entry's primary key decides, as a claim's does: ON CONFLICT DO
--     NOTHING, false if it was there.
--  3. The insert can also succeed for an offset just passed: a transaction that
--     moved the watermark past it deleted its entry and committed while this one
--     waited on that entry.  The watermark read again says so.
--  4. Move the watermark past the entries that follow on from it without a gap
--     (entries whose offset minus their rank above the watermark is the watermark:
--     gaps and islands), the caller's own included, and delete them.  Only
--     committed entries count: an entry that follows on from another transaction's
--     uncommitted one stays until the partition's next completion moves past it.
--     The UPDATE takes the partition's row first, so movers wait for each other
--     there, never for an entry another mover deletes.
-- Compaction (offsets that skip, claim_offset's previous) is left out.
CREATE FUNCTION hand_claim_offset(t text, p int, o bigint) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
    w bigint;
    top bigint;
BEGIN
    SELECT watermark INTO w FROM grp_hand_wm WHERE topic = t AND "partition" = p;
    IF NOT FOUND THEN
        INSERT INTO grp_hand_wm (topic, "partition") VALUES (t, p) ON CONFLICT DO NOTHING;
        w := -1;
    END IF;
    IF o <= w THEN
        RETURN false;
    END IF;
    INSERT INTO grp_hand_done (topic, "partition", "offset") VALUES (t, p, o) ON CONFLICT DO NOTHING;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    SELECT watermark INTO w FROM grp_hand_wm WHERE topic = t AND "partition" = p;
    IF o <= w THEN
        DELETE FROM grp_hand_done WHERE topic = t AND "partition" = p AND "offset" = o;
        RETURN false;
    END IF;
    SELECT max(e."offset") INTO top
      FROM (SELECT d."offset", d."offset" - row_number() OVER (ORDER BY d."offset") AS island
              FROM grp_hand_done d
             WHERE d.topic = t AND d."partition" = p AND d."offset" > w) e
     WHERE e.island = w;
    IF top IS NOT NULL THEN
        UPDATE grp_hand_wm SET watermark = top, advanced_at = now()
         WHERE topic = t AND "partition" = p AND watermark < top;
        DELETE FROM grp_hand_done WHERE topic = t AND "partition" = p AND "offset" <= top;
    END IF;
    RETURN true;
END
$$;

-- In-order offsets and generations by hand, one row per partition.  A fenced
-- advance is the guarded UPDATE with "AND generation = <mine>": a consumer that
-- lost the partition moves nothing and applies nothing (without an error); a new
-- owner takes the partition over with SELECT ... FOR UPDATE, then UPDATE ... SET
-- generation, which waits for the writers of the older generation.  A fenced claim
-- reads the row FOR KEY SHARE with "AND generation = <mine>" before it inserts.
CREATE TABLE grp_hand_pos (
    topic text NOT NULL,
    "partition" int NOT NULL,
    "offset" bigint NOT NULL,
    generation bigint,
    advanced_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (topic, "partition")
);
INSERT INTO grp_hand_pos (topic, "partition", "offset", generation)
SELECT t, g, 0, CASE WHEN t = 'plain' THEN NULL ELSE 1 END
  FROM unnest(ARRAY['plain', 'fenced', 'claims']) t, generate_series(0, 7) g;
CREATE TABLE grp_hand_claims (
    message_id text PRIMARY KEY,
    claimed_at timestamptz NOT NULL DEFAULT now()
);

-- hand_claim_offset gives claim_offset's answers: 200 offsets of partition 0 of
-- topic 'check', each a few places from its turn, and 60 redeliveries mixed in
-- (seeded, the same every run), through both, one at a time; the answers and the
-- watermarks after each must agree.
SELECT setseed(0.25);
CREATE TEMP TABLE grp_deliveries AS
SELECT row_number() OVER (ORDER BY k) AS i, o
  FROM (SELECT g AS o, g + random() * 6 AS k FROM generate_series(0, 199) g
        UNION ALL
        SELECT (random() * 199)::int, random() * 206 FROM generate_series(1, 60)) d;
DO $$
DECLARE
    d record;
    ext boolean;
    hand boolean;
    ext_w bigint;
    hand_w bigint;
    fresh int := 0;
BEGIN
    FOR d IN SELECT i, o FROM grp_deliveries ORDER BY i LOOP
        ext := inbox.claim_offset('grp_inbox', 'check', 0, d.o);
        hand := hand_claim_offset('check', 0, d.o);
        ext_w := coalesce(inbox.position('grp_inbox', 'check', 0), -1);
        SELECT watermark INTO hand_w FROM grp_hand_wm WHERE topic = 'check' AND "partition" = 0;
        IF ext IS DISTINCT FROM hand OR ext_w IS DISTINCT FROM hand_w THEN
            RAISE EXCEPTION 'delivery % (offset %): claim_offset % watermark %, hand_claim_offset % watermark %',
                d.i, d.o, ext, ext_w, hand, hand_w;
        END IF;
        fresh := fresh + ext::int;
    END LOOP;
    IF fresh <> 200 OR hand_w <> 199
       OR EXISTS (SELECT FROM grp_hand_done WHERE topic = 'check')
       OR EXISTS (SELECT FROM inbox.completed_offsets
                   WHERE inbox = 'grp_inbox'::regclass AND topic = 'check') THEN
        RAISE EXCEPTION 'the check scenario ended with % fresh of 200, watermark %', fresh, hand_w;
    END IF;
END
$$;

VACUUM (FREEZE, ANALYZE) inbox.positions, inbox.completed_offsets, grp_inbox, grp_claims,
    grp_hand_wm, grp_hand_done, grp_hand_pos, grp_hand_claims, grp_offset_ext_accounts,
    grp_offset_hand_accounts, grp_advance_accounts, grp_advance_gen_accounts,
    grp_advance_hand_accounts, grp_advance_hand_gen_accounts, grp_claim_accounts,
    grp_fence_hand_accounts;
CHECKPOINT;
