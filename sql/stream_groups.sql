-- Consumer groups: fencing generations, offsets completed out of order, resume
-- points.  Every answer and every error, with its SQLSTATE.
\set VERBOSITY default
SELECT inbox.create_inbox('group_inbox');

-- claim_offset: one offset, in any order.  true when fresh; false at or below the
-- watermark or when completed already.  Offsets 0, 1, 2 in order move the
-- watermark; 5, 6, 7 wait above it; 3 and 4 close the gap and free the entries.
SELECT o, inbox.claim_offset('group_inbox', 'pay', 0, o) AS fresh
  FROM unnest(ARRAY[0, 1, 2, 5, 6, 7, 6, 1]) o;
SELECT inbox.position('group_inbox', 'pay', 0);
SELECT "offset", generation, completed_above, gaps FROM inbox.streams WHERE topic = 'pay';
SELECT "offset", previous FROM inbox.completed_offsets ORDER BY 1;
SELECT inbox.claim_offset('group_inbox', 'pay', 0, 4) AS fresh_4;
SELECT "offset", completed_above, gaps FROM inbox.streams WHERE topic = 'pay';
SELECT inbox.claim_offset('group_inbox', 'pay', 0, 3) AS fresh_3;
SELECT inbox.position('group_inbox', 'pay', 0);
SELECT "offset", completed_above, gaps FROM inbox.streams WHERE topic = 'pay';
SELECT count(*) AS entries_left FROM inbox.completed_offsets;
SELECT o, inbox.claim_offset('group_inbox', 'pay', 0, o) AS fresh
  FROM unnest(ARRAY[3, 7, 8]) o;

-- Two gaps: the view counts them, resume_points lists what is completed above.
SELECT o, inbox.claim_offset('group_inbox', 'pay', 0, o) AS fresh
  FROM unnest(ARRAY[10, 11, 14]) o;
SELECT "offset", completed_above, gaps FROM inbox.streams WHERE topic = 'pay';
SELECT * FROM inbox.resume_points('group_inbox', 'pay');

-- Transactional: a rolled-back completion is not applied, and its entry is gone.
BEGIN;
SELECT inbox.claim_offset('group_inbox', 'pay', 0, 9) AS fresh_9;
SELECT inbox.position('group_inbox', 'pay', 0) AS inside;
ROLLBACK;
SELECT inbox.position('group_inbox', 'pay', 0) AS after_rollback,
       inbox.claim_offset('group_inbox', 'pay', 0, 9) AS fresh_9_again,
       inbox.position('group_inbox', 'pay', 0) AS after_9;

-- previous: the offset delivered before this one, for partitions whose offsets
-- skip (compaction, Kafka's transaction markers).  20 follows 16 directly.
SELECT inbox.claim_offset('group_inbox', 'pay', 0, 20, previous => 16) AS fresh_20;
SELECT inbox.claim_offset('group_inbox', 'pay', 0, 16, previous => 14) AS fresh_16;
SELECT inbox.position('group_inbox', 'pay', 0), inbox.claim_offset('group_inbox', 'pay', 0, 18) AS skipped_18;
-- -1: nothing before it (the first offset a consumer reads from a new partition).
SELECT inbox.claim_offset('group_inbox', 'late', 0, 500, previous => -1) AS fresh_500,
       inbox.position('group_inbox', 'late', 0);

-- A partition that starts past 0: nothing is applied below the first offset read,
-- so the watermark stays NULL until advance says where the partition started.
SELECT inbox.claim_offset('group_inbox', 'mid', 0, 1001), inbox.claim_offset('group_inbox', 'mid', 0, 1000);
SELECT inbox.position('group_inbox', 'mid', 0) IS NULL AS no_watermark,
       (SELECT completed_above FROM inbox.streams WHERE topic = 'mid');
SELECT * FROM inbox.resume_points('group_inbox', 'mid');
SELECT inbox.advance('group_inbox', 'mid', 0, 999) AS started;
SELECT inbox.position('group_inbox', 'mid', 0), (SELECT completed_above FROM inbox.streams WHERE topic = 'mid');

-- advance (every offset up to it applied) and claim_offset on one partition:
-- advance answers false for an offset completed already, and forgets the entries
-- it passes; claim_offset answers false below what advance stored.
SELECT inbox.claim_offset('group_inbox', 'mix', 0, 0), inbox.claim_offset('group_inbox', 'mix', 0, 5),
       inbox.claim_offset('group_inbox', 'mix', 0, 9);
SELECT inbox.advance('group_inbox', 'mix', 0, 5) AS advance_5;
SELECT inbox.advance('group_inbox', 'mix', 0, 7) AS advance_7;
SELECT inbox.position('group_inbox', 'mix', 0), (SELECT array_agg("offset") FROM inbox.completed_offsets WHERE topic = 'mix');
SELECT inbox.claim_offset('group_inbox', 'mix', 0, 6) AS below_7, inbox.claim_offset('group_inbox', 'mix', 0, 8) AS fresh_8;
SELECT inbox.position('group_inbox', 'mix', 0), (SELECT count(*) FROM inbox.completed_offsets WHERE topic = 'mix') AS entries;

-- Storage is bounded: at most max_completed_offsets entries above the watermark.
SET idempotent_inbox.max_completed_offsets = 3;
SELECT o, inbox.claim_offset('group_inbox', 'full', 0, o) FROM unnest(ARRAY[1, 2, 3]) o;
SELECT inbox.claim_offset('group_inbox', 'full', 0, 4);
\echo :SQLSTATE
-- Within reach of the watermark nothing is counted; closing the gap makes room.
SELECT inbox.claim_offset('group_inbox', 'full', 0, 0) AS closes_gap,
       inbox.position('group_inbox', 'full', 0),
       inbox.claim_offset('group_inbox', 'full', 0, 7) AS fits_again;
RESET idempotent_inbox.max_completed_offsets;
SET idempotent_inbox.max_completed_offsets = 0;
SHOW idempotent_inbox.max_completed_offsets;

-- Generations.  The first fenced call takes the partition (true); the same
-- generation holds it (false); a newer one takes it over; an older one is refused
-- with 55I02, naming the partition and both generations.
SELECT inbox.fence('group_inbox', 'orders', 0, 5) AS took, inbox.fence('group_inbox', 'orders', 0, 5) AS again;
SELECT inbox.advance('group_inbox', 'orders', 0, 10, 5) AS advance_gen5;
SELECT inbox.fence('group_inbox', 'orders', 0, 4);
\echo :SQLSTATE
SELECT inbox.advance('group_inbox', 'orders', 0, 11, 4);
\echo :SQLSTATE
SELECT inbox.claim_offset('group_inbox', 'orders', 0, 12, 4);
\echo :SQLSTATE
-- Once fenced, a call with no generation is refused too.
SELECT inbox.advance('group_inbox', 'orders', 0, 11);
\echo :SQLSTATE
SELECT inbox.claim_offset('group_inbox', 'orders', 0, 11);
\echo :SQLSTATE
SELECT inbox.position('group_inbox', 'orders', 0) AS unchanged;
-- A takeover: generation 7 for the partition, in the caller's transaction.
BEGIN;
SELECT inbox.claim_offset('group_inbox', 'orders', 0, 11, generation => 7) AS fresh_gen7;
SELECT generation FROM inbox.streams WHERE topic = 'orders';
ROLLBACK;
SELECT generation AS after_rollback FROM inbox.streams WHERE topic = 'orders';
SELECT inbox.fence('group_inbox', 'orders', 0, 7) AS took_over,
       inbox.advance('group_inbox', 'orders', 0, 11, 5) AS zombie;
\echo :SQLSTATE
SELECT inbox.advance('group_inbox', 'orders', 0, 11, 7) AS owner;
SELECT "offset", generation FROM inbox.streams WHERE topic = 'orders';
-- Other partitions are independent.
SELECT inbox.advance('group_inbox', 'orders', 1, 3) AS unfenced_partition,
       inbox.advance('group_inbox', 'orders', 2, 3, 1) AS gen1_partition;
-- Claims: fence first, in the same transaction, then claim as usual.
BEGIN;
SELECT inbox.fence('group_inbox', 'orders', 0, 7) AS held;
SELECT inbox.claim('group_inbox', 'order-1') AS claimed;
COMMIT;
BEGIN;
SELECT inbox.fence('group_inbox', 'orders', 0, 6);
ROLLBACK;
SELECT inbox.claim('group_inbox', 'order-1') AS dup;
SELECT * FROM inbox.resume_points('group_inbox', 'orders');

-- Bad input, each with its SQLSTATE; nothing stored.
SELECT inbox.claim_offset('group_inbox', 'pay', 0, NULL);
\echo :SQLSTATE
SELECT inbox.claim_offset('group_inbox', 'pay', 0, -1);
\echo :SQLSTATE
SELECT inbox.claim_offset('group_inbox', 'pay', -1, 1);
\echo :SQLSTATE
SELECT inbox.claim_offset('group_inbox', NULL, 0, 1);
\echo :SQLSTATE
SELECT inbox.claim_offset('group_inbox', '', 0, 1);
\echo :SQLSTATE
SELECT inbox.claim_offset('group_inbox', repeat('t', 1025), 0, 1);
\echo :SQLSTATE
SELECT inbox.claim_offset('group_inbox', 'pay', 0, 30, generation => -1);
\echo :SQLSTATE
SELECT inbox.claim_offset('group_inbox', 'pay', 0, 30, previous => 30);
\echo :SQLSTATE
SELECT inbox.claim_offset('group_inbox', 'pay', 0, 30, previous => -2);
\echo :SQLSTATE
SELECT inbox.claim_offset('group_inbox', 'pay', 0, 0, previous => 0);
\echo :SQLSTATE
SELECT inbox.claim_offset(NULL, 'pay', 0, 30);
\echo :SQLSTATE
SELECT inbox.fence('group_inbox', 'pay', 0, NULL);
\echo :SQLSTATE
SELECT inbox.fence('group_inbox', 'pay', 0, -5);
\echo :SQLSTATE
SELECT inbox.advance('group_inbox', 'pay', 0, 30, -5);
\echo :SQLSTATE
SELECT inbox.resume_points('group_inbox', NULL);
\echo :SQLSTATE
SELECT inbox.resume_points('pg_class', 'pay');
\echo :SQLSTATE
SELECT inbox.claim_offset('pg_class', 'pay', 0, 1);
\echo :SQLSTATE
-- A NULL generation is no generation.
SELECT inbox.advance('group_inbox', 'pay', 0, 30, NULL) AS unfenced;
-- The largest offset: there is nowhere to seek past it.
SELECT inbox.claim_offset('group_inbox', 'max', 0, 9223372036854775807, previous => -1);
SELECT "offset", seek_to FROM inbox.resume_points('group_inbox', 'max');
SELECT count(*) AS entries, max("offset") FROM inbox.completed_offsets WHERE topic = 'pay';

-- A read-only transaction refuses every write by the function's name (25006), and
-- still reads.
BEGIN READ ONLY;
SELECT inbox.fence('group_inbox', 'pay', 1, 1);
\echo :SQLSTATE
ROLLBACK;
BEGIN READ ONLY;
SELECT inbox.claim_offset('group_inbox', 'pay', 1, 1);
\echo :SQLSTATE
ROLLBACK;
BEGIN READ ONLY;
SELECT inbox.advance('group_inbox', 'pay', 1, 1, 1);
\echo :SQLSTATE
ROLLBACK;
BEGIN READ ONLY;
SELECT inbox.advance('group_inbox', 'pay', 1, 1);
\echo :SQLSTATE
ROLLBACK;
BEGIN READ ONLY;
SELECT inbox.position('group_inbox', 'pay', 0) AS read_only_position;
SELECT count(*) AS read_only_resume_points FROM inbox.resume_points('group_inbox', 'pay');
COMMIT;

-- Rights: INSERT on the inbox to claim an offset or fence, SELECT to read; 42501
-- before anything is locked or read.
CREATE ROLE group_reader;
GRANT USAGE ON SCHEMA inbox TO group_reader;
GRANT SELECT ON group_inbox TO group_reader;
SET ROLE group_reader;
SELECT "partition", "offset", seek_to FROM inbox.resume_points('group_inbox', 'orders');
SELECT count(*) > 0 AS sees_streams FROM inbox.streams;
SELECT inbox.claim_offset('group_inbox', 'pay', 0, 40);
\echo :SQLSTATE
SELECT inbox.fence('group_inbox', 'pay', 0, 1);
\echo :SQLSTATE
SELECT * FROM inbox.completed_offsets;
\echo :SQLSTATE
SELECT * FROM inbox.partition_progress;
\echo :SQLSTATE
RESET ROLE;
REVOKE SELECT ON group_inbox FROM group_reader;
SET ROLE group_reader;
SELECT count(*) AS sees_no_streams FROM inbox.streams;
SELECT * FROM inbox.resume_points('group_inbox', 'orders');
\echo :SQLSTATE
RESET ROLE;
DROP OWNED BY group_reader;
DROP ROLE group_reader;

-- Dropping the inbox forgets its positions and completed offsets.
SELECT inbox.claim_offset('group_inbox', 'leftover', 0, 5);
DROP TABLE group_inbox;
SELECT count(*) AS positions_left FROM inbox.positions;
SELECT count(*) AS completed_left FROM inbox.completed_offsets;
