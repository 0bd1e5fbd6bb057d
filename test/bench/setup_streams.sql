-- Streams: stream_inbox holds the positions that advance moves (one row per
-- partition) and the claims of the claim-per-message consumer (one row per
-- message); hand_positions is the hand-written consumer's own offset table.  Each
-- consumer applies its messages to its own copy of 1000 accounts, whose effects
-- column counts the messages applied, so that run can check that each was applied
-- exactly once.  For the COPY runs: sink_plain, sink_noop, sink_trig and sink_hand, of
-- the same shape, sink_noop with a trigger that does nothing (what any BEFORE ROW
-- trigger costs a COPY), sink_trig deduplicated by dedup_trigger into sink_inbox,
-- sink_hand by a hand-written PL/pgSQL trigger into sink_hand_inbox; and :file
-- (psql -v) with :rows rows, ids in random order as uuids or hashes arrive.
\set ON_ERROR_STOP 1
SELECT inbox.create_inbox('stream_inbox');
CREATE TABLE adv_accounts (id int PRIMARY KEY, balance bigint NOT NULL, effects bigint NOT NULL);
CREATE TABLE claim_accounts (LIKE adv_accounts INCLUDING ALL);
CREATE TABLE hand_accounts (LIKE adv_accounts INCLUDING ALL);
INSERT INTO adv_accounts SELECT g, 0, 0 FROM generate_series(1, 1000) g;
INSERT INTO claim_accounts SELECT * FROM adv_accounts;
INSERT INTO hand_accounts SELECT * FROM adv_accounts;
CREATE TABLE hand_positions (
    topic text NOT NULL,
    "partition" int NOT NULL,
    "offset" bigint NOT NULL,
    advanced_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (topic, "partition")
);
-- One row per pgbench client (the runs use at most 8).
INSERT INTO hand_positions (topic, "partition", "offset")
SELECT 'payments', g, 0 FROM generate_series(0, 7) g;

SELECT inbox.create_inbox('sink_inbox');
CREATE TABLE sink_plain (
    id text PRIMARY KEY,
    account int NOT NULL,
    amount int NOT NULL,
    currency text NOT NULL,
    created_at timestamptz NOT NULL
);
CREATE TABLE sink_noop (LIKE sink_plain INCLUDING ALL);
CREATE FUNCTION pass_row() RETURNS trigger LANGUAGE plpgsql AS 'BEGIN RETURN NEW; END';
CREATE TRIGGER sink_pass BEFORE INSERT ON sink_noop FOR EACH ROW EXECUTE FUNCTION pass_row();
CREATE TABLE sink_trig (LIKE sink_plain INCLUDING ALL);
CREATE TRIGGER sink_dedup BEFORE INSERT ON sink_trig
    FOR EACH ROW EXECUTE FUNCTION inbox.dedup_trigger('sink_inbox', 'id');
-- The same deduplication by hand: a PL/pgSQL row trigger claiming into a plain table.
CREATE TABLE sink_hand (LIKE sink_plain INCLUDING ALL);
CREATE TABLE sink_hand_inbox (
    message_id text PRIMARY KEY,
    claimed_at timestamptz NOT NULL DEFAULT now()
);
CREATE FUNCTION dedup_by_hand() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO sink_hand_inbox (message_id) VALUES (NEW.id) ON CONFLICT DO NOTHING;
    IF FOUND THEN
        RETURN NEW;
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER sink_hand_dedup BEFORE INSERT ON sink_hand
    FOR EACH ROW EXECUTE FUNCTION dedup_by_hand();
COPY (SELECT md5('evt' || g), 1 + g % 1000, 100 + g % 9000, 'EUR',
             timestamptz '2024-01-01' + g * interval '1 second'
        FROM generate_series(1, :rows) g) TO :'file';
VACUUM (FREEZE, ANALYZE) stream_inbox, adv_accounts, claim_accounts, hand_accounts,
    hand_positions;
CHECKPOINT;
