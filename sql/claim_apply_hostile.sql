-- claim_apply with statements that are not one plain DML statement (issue 9, items 8
-- and 13): each is refused with a specific SQLSTATE, never XX000, never "applied"
-- for an effect that did not run, and a failed prepare leaves no memory behind.
\set SHOW_CONTEXT never
SELECT inbox.create_inbox('hostile_apply_inbox');
CREATE TABLE hostile_apply_effects (n int);

-- Nothing to run: an error (42601), and no claim is left.
SELECT inbox.claim_apply('hostile_apply_inbox', 'e1', '');
\echo :SQLSTATE
SELECT inbox.claim_apply('hostile_apply_inbox', 'e2', '   ');
\echo :SQLSTATE
SELECT inbox.claim_apply('hostile_apply_inbox', 'e3', ' -- only a comment');
\echo :SQLSTATE
SELECT inbox.claim_apply('hostile_apply_inbox', 'e4', '/* a comment */ ; ;');
\echo :SQLSTATE
SELECT count(*) AS claims_left FROM hostile_apply_inbox;

-- COPY to or from the client cannot run in a function: 0A000 with a hint.
SELECT inbox.claim_apply('hostile_apply_inbox', 'c1', 'COPY hostile_apply_effects FROM STDIN');
\echo :SQLSTATE
SELECT inbox.claim_apply('hostile_apply_inbox', 'c2', 'COPY hostile_apply_effects TO STDOUT');
\echo :SQLSTATE
SELECT inbox.claim_apply('hostile_apply_inbox', 'c3',
    'INSERT INTO hostile_apply_effects VALUES (1); COPY hostile_apply_effects FROM STDIN');
\echo :SQLSTATE
-- Transaction control, alone or after another statement: 2D000.
SELECT inbox.claim_apply('hostile_apply_inbox', 't1',
    'INSERT INTO hostile_apply_effects VALUES (1); COMMIT');
\echo :SQLSTATE
SELECT inbox.claim_apply('hostile_apply_inbox', 't2', 'SAVEPOINT s');
\echo :SQLSTATE
SELECT count(*) AS claims_left, (SELECT count(*) FROM hostile_apply_effects) AS effects
  FROM hostile_apply_inbox;

-- Several statements run in order, as SPI runs them.
SELECT inbox.claim_apply('hostile_apply_inbox', 'm1',
    'INSERT INTO hostile_apply_effects VALUES ($1); INSERT INTO hostile_apply_effects VALUES ($1 + 1)', 10);
SELECT n FROM hostile_apply_effects ORDER BY n;

-- A statement that fails to prepare (here when its rules are applied, after the
-- parameter types were found) frees what was built for it: many failures leave the
-- backend's memory as it was.
CREATE VIEW hostile_apply_view AS SELECT 1 AS n UNION SELECT 2;
SELECT inbox.claim_apply('hostile_apply_inbox', 'p1', 'INSERT INTO hostile_apply_view VALUES ($1)', 1);
\echo :SQLSTATE
SELECT inbox.claim_apply('hostile_apply_inbox', 'p1', 'INSERT INTO hostile_apply_effects VALUES ($1', 1);
\echo :SQLSTATE
CREATE TEMP TABLE hostile_apply_memory AS
SELECT count(*) FILTER (WHERE name = 'idempotent_inbox statement') AS statements,
       sum(total_bytes) FILTER (WHERE name = 'CacheMemoryContext') AS cache_bytes
  FROM pg_backend_memory_contexts;
DO $$
BEGIN
    FOR i IN 1..3000 LOOP
        BEGIN
            PERFORM inbox.claim_apply('hostile_apply_inbox', 'p1',
                'INSERT INTO hostile_apply_view VALUES ($1)', i);
        EXCEPTION WHEN object_not_in_prerequisite_state THEN NULL;
        END;
        BEGIN
            PERFORM inbox.claim_apply('hostile_apply_inbox', 'p1',
                'INSERT INTO hostile_apply_effects VALUES ($1', i);
        EXCEPTION WHEN syntax_error THEN NULL;
        END;
        BEGIN
            PERFORM inbox.claim_apply('hostile_apply_inbox', 'p1', 'SELECT $1::int', 'x' || i);
        EXCEPTION WHEN invalid_text_representation THEN NULL;
        END;
    END LOOP;
END
$$;
SELECT m.statements - b.statements AS new_statement_contexts,
       m.cache_bytes - b.cache_bytes < 65536 AS cache_memory_flat
  FROM hostile_apply_memory b,
       (SELECT count(*) FILTER (WHERE name = 'idempotent_inbox statement') AS statements,
               sum(total_bytes) FILTER (WHERE name = 'CacheMemoryContext') AS cache_bytes
          FROM pg_backend_memory_contexts) m;

-- The statement drops the extension: a clear error (55000), and the DROP is
-- rolled back with it.
SELECT inbox.claim_apply('hostile_apply_inbox', 'd1', 'DROP EXTENSION idempotent_inbox');
\echo :SQLSTATE
SELECT inbox.claim_apply('hostile_apply_inbox', 'd2', 'DROP EXTENSION idempotent_inbox CASCADE');
\echo :SQLSTATE
SELECT count(*) AS extension_still_there FROM pg_extension WHERE extname = 'idempotent_inbox';
SELECT inbox.claim_apply('hostile_apply_inbox', 'd3', 'SELECT 1');

-- Item 8: a statement whose trigger calls claim_apply again, with more distinct
-- statements than the cache holds, so that the nested calls evict while the outer
-- statements run.  Entries in use stay pinned: every level completes.
SET idempotent_inbox.statement_cache_size = 2;
CREATE TABLE hostile_apply_tree (depth int, branch int);
CREATE FUNCTION hostile_apply_fanout() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.depth < 3 THEN
        FOR b IN 1..5 LOOP
            PERFORM inbox.claim_apply('hostile_apply_inbox',
                format('tree-%s-%s-%s', NEW.depth, NEW.branch, b),
                format('INSERT INTO hostile_apply_tree VALUES ($1, $2) /* statement %s of level %s */',
                       b, NEW.depth),
                NEW.depth + 1, NEW.branch * 10 + b);
        END LOOP;
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER fanout AFTER INSERT ON hostile_apply_tree
    FOR EACH ROW EXECUTE FUNCTION hostile_apply_fanout();
SELECT inbox.claim_apply('hostile_apply_inbox', 'tree', 'INSERT INTO hostile_apply_tree VALUES ($1, $2)', 0, 0);
SELECT depth, count(*) FROM hostile_apply_tree GROUP BY depth ORDER BY depth;
-- Nested calls that fail are unpinned too: the cache shrinks back to its size.
CREATE OR REPLACE FUNCTION hostile_apply_fanout() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.depth < 2 THEN
        FOR b IN 1..5 LOOP
            BEGIN
                PERFORM inbox.claim_apply('hostile_apply_inbox',
                    format('fail-%s-%s-%s', NEW.depth, NEW.branch, b),
                    format('INSERT INTO hostile_apply_tree VALUES ($1, $2 / 0) /* %s %s */', b, NEW.depth),
                    NEW.depth + 1, b);
            EXCEPTION WHEN division_by_zero THEN NULL;
            END;
        END LOOP;
    END IF;
    RETURN NEW;
END
$$;
SELECT inbox.claim_apply('hostile_apply_inbox', 'fail', 'INSERT INTO hostile_apply_tree VALUES ($1, $2)', 0, 1);
SELECT inbox.claim_apply('hostile_apply_inbox', 'after-1', 'SELECT 1');
SELECT inbox.claim_apply('hostile_apply_inbox', 'after-2', 'SELECT 2');
SELECT count(*) <= 2 AS cache_within_size
  FROM pg_backend_memory_contexts WHERE name = 'idempotent_inbox statement';
RESET idempotent_inbox.statement_cache_size;

DROP TABLE hostile_apply_tree, hostile_apply_effects;
DROP VIEW hostile_apply_view;
DROP FUNCTION hostile_apply_fanout();
SELECT inbox.drop_inbox('hostile_apply_inbox');
