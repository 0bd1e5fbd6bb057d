-- Tables for the upsert and transition benchmarks: two identical pairs, one
-- written through the extension and one by hand, each preloaded the same way.
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
-- The _row and _key tables are written through the typed entry points (upsert_row,
-- transition_key).
DROP TABLE IF EXISTS up_ext, up_hand, up_row, tr_ext, tr_hand, tr_key;
CREATE TABLE up_ext (id bigint PRIMARY KEY, status text NOT NULL, amount int);
CREATE TABLE up_hand (LIKE up_ext INCLUDING ALL);
CREATE TABLE up_row (LIKE up_ext INCLUDING ALL);
INSERT INTO up_ext SELECT g, 'PAID', 50 FROM generate_series(1, 100000) g;
INSERT INTO up_hand SELECT * FROM up_ext;
INSERT INTO up_row SELECT * FROM up_ext;
CREATE TABLE tr_ext (id int PRIMARY KEY, state text NOT NULL);
CREATE TABLE tr_hand (LIKE tr_ext INCLUDING ALL);
CREATE TABLE tr_key (LIKE tr_ext INCLUDING ALL);
INSERT INTO tr_ext SELECT g, 'PENDING' FROM generate_series(1, :rows) g;
INSERT INTO tr_hand SELECT * FROM tr_ext;
INSERT INTO tr_key SELECT * FROM tr_ext;
VACUUM (FREEZE, ANALYZE) up_ext, up_hand, up_row, tr_ext, tr_hand, tr_key;
CHECKPOINT;
