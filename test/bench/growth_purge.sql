-- inbox.purge('growth_inbox', :batch) until it returns 0, each call its own
-- transaction, timed by the server's clock; prints calls, rows, start, end (as
-- purge_all.sql does for purge_inbox).
\set ON_ERROR_STOP 1
SELECT set_config('bench.batch', :'batch', false) \gset
DO $$
DECLARE
    t0 timestamptz := clock_timestamp();
    batch int := current_setting('bench.batch')::int;
    n bigint;
    total bigint := 0;
    calls int := 0;
BEGIN
    LOOP
        n := inbox.purge('growth_inbox', batch);
        COMMIT;
        total := total + n;
        calls := calls + 1;
        EXIT WHEN n = 0;
    END LOOP;
    PERFORM set_config('bench.purge', format('%s %s %s %s', calls, total,
                       extract(epoch FROM t0), extract(epoch FROM clock_timestamp())), false);
END
$$;
SELECT current_setting('bench.purge');
