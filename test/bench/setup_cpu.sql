-- For the cpu section's COPY counts: a sink table four times over, plain, behind a
-- trigger that does nothing, behind dedup_trigger and behind the same deduplication
-- written by hand in PL/pgSQL; and two files of :short_rows and :long_rows rows with
-- distinct ids in random order (psql -v), written by the server.
\set ON_ERROR_STOP 1
SELECT inbox.create_inbox('cpu_inbox');
CREATE TABLE cpu_plain (
    id text PRIMARY KEY,
    account int NOT NULL,
    amount int NOT NULL,
    currency text NOT NULL,
    created_at timestamptz NOT NULL
);
CREATE TABLE cpu_noop (LIKE cpu_plain INCLUDING ALL);
CREATE FUNCTION cpu_pass_row() RETURNS trigger LANGUAGE plpgsql AS 'BEGIN RETURN NEW; END';
CREATE TRIGGER cpu_pass BEFORE INSERT ON cpu_noop FOR EACH ROW EXECUTE FUNCTION cpu_pass_row();
CREATE TABLE cpu_trig (LIKE cpu_plain INCLUDING ALL);
CREATE TRIGGER cpu_dedup BEFORE INSERT ON cpu_trig
    FOR EACH ROW EXECUTE FUNCTION inbox.dedup_trigger('cpu_inbox', 'id');
CREATE TABLE cpu_hand (LIKE cpu_plain INCLUDING ALL);
CREATE TABLE cpu_hand_inbox (
    message_id text PRIMARY KEY,
    claimed_at timestamptz NOT NULL DEFAULT now()
);
CREATE FUNCTION cpu_dedup_by_hand() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO cpu_hand_inbox (message_id) VALUES (NEW.id) ON CONFLICT DO NOTHING;
    IF FOUND THEN
        RETURN NEW;
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER cpu_hand_dedup BEFORE INSERT ON cpu_hand
    FOR EACH ROW EXECUTE FUNCTION cpu_dedup_by_hand();
COPY (SELECT md5('cpu' || g), 1 + g % 1000, 100 + g % 9000, 'EUR',
             timestamptz '2024-01-01' + g * interval '1 second'
        FROM generate_series(1, :short_rows) g) TO :'short';
COPY (SELECT md5('cpu' || g), 1 + g % 1000, 100 + g % 9000, 'EUR',
             timestamptz '2024-01-01' + g * interval '1 second'
        FROM generate_series(1, :long_rows) g) TO :'long';
