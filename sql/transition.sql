-- transition: moved, already, rejected, missing; keys; errors.
\set SHOW_CONTEXT never

CREATE TYPE pay_state AS ENUM ('PENDING', 'PAID', 'SHIPPED', 'CANCELLED');
CREATE TABLE orders (id int PRIMARY KEY, ref text UNIQUE, state pay_state NOT NULL DEFAULT 'PENDING',
                     label text);
INSERT INTO orders (id, ref) VALUES (1, 'o-1'), (2, 'o-2'), (3, 'o-3');

SELECT inbox.transition('orders', '{"id": 1}', 'state', ARRAY['PENDING'], 'PAID');
SELECT xmin AS paid_xmin FROM orders WHERE id = 1 \gset
SELECT inbox.transition('orders', '{"id": 1}', 'state', ARRAY['PENDING'], 'PAID');
SELECT xmin = :'paid_xmin' AS replay_wrote_nothing FROM orders WHERE id = 1;
SELECT inbox.transition('orders', '{"id": 1}', 'state', ARRAY['PENDING'], 'CANCELLED');
SELECT inbox.transition('orders', '{"id": 1}', 'state', ARRAY['PAID'], 'SHIPPED');
SELECT inbox.transition('orders', '{"id": 42}', 'state', ARRAY['PENDING'], 'PAID');
-- Keyed by a unique constraint; key values are converted like upsert's.
SELECT inbox.transition('orders', '{"ref": "o-2"}', 'state', ARRAY['PENDING', 'PAID'], 'PAID');
SELECT inbox.transition('orders', '{"id": "3"}', 'state', '{PENDING}', 'CANCELLED');
-- A text state column works the same.
UPDATE orders SET label = 'new';
SELECT inbox.transition('orders', '{"id": 3}', 'label', ARRAY['new'], 'old'),
       inbox.transition('orders', '{"id": 3}', 'label', ARRAY['new'], 'old');
SELECT id, state, label FROM orders ORDER BY id;

-- A rolled back move is undone; the redelivery moves again.
BEGIN;
SELECT inbox.transition('orders', '{"id": 2}', 'state', ARRAY['PAID'], 'SHIPPED');
ROLLBACK;
SELECT inbox.transition('orders', '{"id": 2}', 'state', ARRAY['PAID'], 'SHIPPED');

-- After a run of moves the UPDATE goes first; every answer stays the same, and a
-- replay still writes nothing.
CREATE TABLE many (id int PRIMARY KEY, state text NOT NULL);
INSERT INTO many SELECT g, 'PENDING' FROM generate_series(1, 42) g;
SELECT outcome, count(*) FROM (
    SELECT inbox.transition('many', jsonb_build_object('id', g), 'state', ARRAY['PENDING'], 'PAID') AS outcome
      FROM generate_series(1, 40) g) s GROUP BY 1;
UPDATE many SET state = 'CANCELLED' WHERE id = 41;
SELECT xmin AS many_xmin FROM many WHERE id = 5 \gset
SELECT inbox.transition('many', '{"id": 42}', 'state', ARRAY['PENDING'], 'PAID') AS pending,
       inbox.transition('many', '{"id": 5}', 'state', ARRAY['PENDING'], 'PAID') AS replay,
       inbox.transition('many', '{"id": 41}', 'state', ARRAY['PENDING'], 'PAID') AS cancelled,
       inbox.transition('many', '{"id": 99}', 'state', ARRAY['PENDING'], 'PAID') AS absent;
SELECT xmin = :'many_xmin' AS replay_wrote_nothing FROM many WHERE id = 5;
DROP TABLE many;

-- Errors.
SELECT inbox.transition('orders', '{"id": 1}', 'state', ARRAY['PAID'], 'LOST');
\echo :SQLSTATE
SELECT inbox.transition('orders', '{"id": 1}', 'nope', ARRAY['PAID'], 'SHIPPED');
\echo :SQLSTATE
SELECT inbox.transition('orders', '{"label": "x"}', 'state', ARRAY['PAID'], 'SHIPPED');
\echo :SQLSTATE
SELECT inbox.transition('orders', '{"id": 1, "ref": "o-1"}', 'state', ARRAY['PAID'], 'SHIPPED');
\echo :SQLSTATE
SELECT inbox.transition('orders', '{}', 'state', ARRAY['PAID'], 'SHIPPED');
\echo :SQLSTATE
\echo :SQLSTATE
SELECT inbox.transition('orders', NULL, 'state', ARRAY['PAID'], 'SHIPPED');
\echo :SQLSTATE
SELECT inbox.transition('orders', '[1]', 'state', ARRAY['PAID'], 'SHIPPED');
\echo :SQLSTATE
SELECT inbox.transition('orders', '{"id": 1}', NULL, ARRAY['PAID'], 'SHIPPED');
\echo :SQLSTATE
SELECT inbox.transition('orders', '{"id": 1}', 'state', ARRAY['PAID'], NULL);
\echo :SQLSTATE
SELECT inbox.transition('orders', '{"id": 1}', 'state', NULL, 'SHIPPED');
\echo :SQLSTATE
SELECT inbox.transition('orders', '{"id": 1}', 'state', ARRAY['PAID', NULL], 'SHIPPED');
\echo :SQLSTATE
SELECT inbox.transition('orders', '{"id": 1}', 'state', 'SHIPPED');
\echo :SQLSTATE
SELECT inbox.transition('orders', '{"id": "one"}', 'state', ARRAY['PAID'], 'SHIPPED');
\echo :SQLSTATE
SELECT inbox.transition('no_such_table', '{"id": 1}', 'state', ARRAY['PAID'], 'SHIPPED');
\echo :SQLSTATE
SELECT id, state FROM orders ORDER BY id;

DROP TABLE orders;
DROP TYPE pay_state;
