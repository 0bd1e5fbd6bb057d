-- purge(purge_inbox, 10000) until it returns 0, each call its own transaction (a DO
-- block may commit), timed by the server's clock; prints calls, rows, start, end.
\set ON_ERROR_STOP 1
DO $$
DECLARE
    t0 timestamptz := clock_timestamp();
    n bigint;
    total bigint := 0;
    calls int := 0;
BEGIN
    LOOP
        n := inbox.purge('purge_inbox', 10000);
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
