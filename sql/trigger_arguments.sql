-- Issue 9, item 13: inbox.trigger_arguments decodes pg_trigger.tgargs for the
-- state_machines view, but anyone may call it with any bytes.  It returns text only
-- when every argument is there, NUL-terminated and valid in the database encoding;
-- anything else is an error with its own SQLSTATE, and it never reads past the bytea.
\set SHOW_CONTEXT never

-- What pg_trigger holds.
SELECT inbox.trigger_arguments('\x'::bytea, 0::int2);
SELECT inbox.trigger_arguments('\x737461746500'::bytea, 1::int2);
SELECT inbox.trigger_arguments('\x6100623b6300'::bytea, 2::int2);
SELECT inbox.trigger_arguments('\x00'::bytea, 1::int2);
SELECT inbox.trigger_arguments(convert_to('état', 'UTF8') || '\x00'::bytea, 1::int2);

-- Bytes that are not valid UTF-8 (the regression database's encoding).
SELECT inbox.trigger_arguments('\xff00'::bytea, 1::int2);
\echo :SQLSTATE
SELECT inbox.trigger_arguments('\x6100c3'::bytea || '\x00'::bytea, 2::int2);
\echo :SQLSTATE
SELECT inbox.trigger_arguments('\xc0af00'::bytea, 1::int2);
\echo :SQLSTATE

-- Counts that do not match the bytes.
SELECT inbox.trigger_arguments('\x6100'::bytea, 2::int2);
\echo :SQLSTATE
SELECT inbox.trigger_arguments('\x61'::bytea, 1::int2);
\echo :SQLSTATE
SELECT inbox.trigger_arguments('\x'::bytea, 32767::int2);
\echo :SQLSTATE
SELECT inbox.trigger_arguments('\x61006200'::bytea, 1::int2);
\echo :SQLSTATE
SELECT inbox.trigger_arguments('\x6100'::bytea, 0::int2);
\echo :SQLSTATE
SELECT inbox.trigger_arguments('\x6100'::bytea, (-1)::int2);
\echo :SQLSTATE

-- Every trigger in the catalog decodes, and round-trips.
SELECT count(*) AS undecodable
  FROM pg_trigger t
 WHERE array_length(inbox.trigger_arguments(t.tgargs, t.tgnargs), 1) IS DISTINCT FROM nullif(t.tgnargs, 0);
