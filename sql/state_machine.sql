-- guard_transitions: a state machine every writer obeys.
\set SHOW_CONTEXT never

CREATE TABLE shipments (id int PRIMARY KEY, status text NOT NULL, carrier text);
INSERT INTO shipments VALUES (1, 'PENDING', NULL), (2, 'PENDING', NULL), (3, 'PAID', NULL);

SELECT inbox.guard_transitions('shipments', 'status',
    '{"PENDING": ["PAID", "CANCELLED"], "PAID": ["SHIPPED", "REFUNDED"], "SHIPPED": []}');
SELECT target, state_column, edges FROM inbox.state_machines;

-- Plain UPDATEs obey it: legal moves pass, illegal ones are errors with their own SQLSTATE.
UPDATE shipments SET status = 'PAID' WHERE id = 1;
UPDATE shipments SET status = 'PENDING' WHERE id = 1;
\echo :SQLSTATE
UPDATE shipments SET status = 'SHIPPED' WHERE id = 2;
\echo :SQLSTATE
UPDATE shipments SET status = 'LOST' WHERE id = 3;
\echo :SQLSTATE
-- Moving to or from NULL is not a transition the machine allows.
ALTER TABLE shipments ALTER COLUMN status DROP NOT NULL;
UPDATE shipments SET status = NULL WHERE id = 3;
\echo :SQLSTATE
-- Leaving the state as it is, or updating other columns, is not a transition.
UPDATE shipments SET status = status, carrier = 'dhl' WHERE id = 3;
UPDATE shipments SET carrier = 'ups' WHERE id = 2;
-- A multi-row UPDATE is all or nothing.
UPDATE shipments SET status = 'SHIPPED';
\echo :SQLSTATE
SELECT id, status, carrier FROM shipments ORDER BY id;

-- transition without from_states takes the sources from the machine.
SELECT inbox.transition('shipments', '{"id": 3}', 'status', 'SHIPPED');
SELECT inbox.transition('shipments', '{"id": 3}', 'status', 'SHIPPED');
SELECT inbox.transition('shipments', '{"id": 2}', 'status', 'SHIPPED');
SELECT inbox.transition('shipments', '{"id": 2}', 'status', NULL, 'CANCELLED');
-- Explicit from_states still meet the machine: a listed but illegal move is refused.
SELECT inbox.transition('shipments', '{"id": 3}', 'status', ARRAY['SHIPPED'], 'PENDING');
\echo :SQLSTATE

-- Installing again replaces the machine.
SELECT inbox.guard_transitions('shipments', 'status', '{"SHIPPED": ["RETURNED"], "CANCELLED": []}');
SELECT count(*) AS machines FROM inbox.state_machines;
UPDATE shipments SET status = 'RETURNED' WHERE id = 3;
SELECT inbox.transition('shipments', '{"id": 1}', 'status', 'SHIPPED');

-- A machine on an enum column checks its states against the type.
CREATE TYPE ship_state AS ENUM ('NEW', 'DONE');
CREATE TABLE jobs (id int PRIMARY KEY, state ship_state NOT NULL DEFAULT 'NEW');
SELECT inbox.guard_transitions('jobs', 'state', '{"NEW": ["DONE"], "DONE": ["LATER"]}');
\echo :SQLSTATE
SELECT inbox.guard_transitions('jobs', 'state', '{"NEW": ["DONE"]}');
INSERT INTO jobs VALUES (1);
UPDATE jobs SET state = 'DONE';
UPDATE jobs SET state = 'NEW';
\echo :SQLSTATE

-- Bad machines and arguments.
SELECT inbox.guard_transitions('shipments', 'status', '{"A": "B"}');
\echo :SQLSTATE
SELECT inbox.guard_transitions('shipments', 'status', '{"A": [1]}');
\echo :SQLSTATE
SELECT inbox.guard_transitions('shipments', 'status', '{"A": [{"B": 1}]}');
\echo :SQLSTATE
SELECT inbox.guard_transitions('shipments', 'status', '["A"]');
\echo :SQLSTATE
SELECT inbox.guard_transitions('shipments', 'status', NULL);
\echo :SQLSTATE
SELECT inbox.guard_transitions('shipments', NULL, '{}');
\echo :SQLSTATE
SELECT inbox.guard_transitions('shipments', 'nope', '{}');
\echo :SQLSTATE
SELECT inbox.guard_transitions('no_such_table', 'status', '{}');
\echo :SQLSTATE
CREATE TRIGGER inbox_guard_carrier BEFORE UPDATE ON shipments
    FOR EACH ROW EXECUTE FUNCTION suppress_redundant_updates_trigger();
SELECT inbox.guard_transitions('shipments', 'carrier', '{}');
\echo :SQLSTATE
DROP TRIGGER inbox_guard_carrier ON shipments;
-- The trigger refuses to run any other way than guard_transitions installs it.
CREATE TABLE misuse (id int, s text);
CREATE TRIGGER misuse AFTER UPDATE ON misuse FOR EACH ROW EXECUTE FUNCTION inbox.guard_trigger('s', '{}');
INSERT INTO misuse VALUES (1, 'a');
UPDATE misuse SET s = 'b';
\echo :SQLSTATE
DROP TABLE misuse;

-- Only the owner may install or remove a machine; every writer obeys it.
CREATE ROLE regress_guard_writer;
GRANT SELECT, UPDATE ON shipments TO regress_guard_writer;
SET ROLE regress_guard_writer;
SELECT inbox.guard_transitions('shipments', 'status', '{}');
\echo :SQLSTATE
SELECT inbox.unguard_transitions('shipments', 'status');
\echo :SQLSTATE
UPDATE shipments SET status = 'PENDING' WHERE id = 3;
\echo :SQLSTATE
RESET ROLE;
REVOKE ALL ON shipments FROM regress_guard_writer;
DROP ROLE regress_guard_writer;

-- Removing it.
SELECT inbox.unguard_transitions('shipments', 'status') AS removed,
       inbox.unguard_transitions('shipments', 'status') AS removed_again;
UPDATE shipments SET status = 'ANYTHING' WHERE id = 1;
SELECT target, state_column FROM inbox.state_machines ORDER BY 1::text;

DROP TABLE shipments, jobs;
DROP TYPE ship_state;
SELECT count(*) AS machines_left FROM inbox.state_machines;
