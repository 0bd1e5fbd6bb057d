-- One timed load: COPY :file into :table (psql -v), in its own transaction, timed
-- by the server's clock including the commit; prints milliseconds and the rows
-- the table then holds.
\set ON_ERROR_STOP 1
SELECT clock_timestamp() AS t0 \gset
COPY :table FROM :'file';
SELECT round(extract(epoch FROM clock_timestamp() - :'t0'::timestamptz) * 1000, 1), count(*)
  FROM :table;
