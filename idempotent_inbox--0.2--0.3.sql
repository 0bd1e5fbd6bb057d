\echo Use "ALTER EXTENSION idempotent_inbox UPDATE TO '0.3'" to load this file. \quit

/*
 * 0.2 to 0.3: sharded inboxes.  The end state is exactly that of CREATE EXTENSION
 * at 0.3 (sql/upgrade.sql compares every member object), and no row of the
 * registry, the positions or any inbox table is touched: every existing inbox has
 * no shard key (NULL).  Written with the rules of idempotent_inbox--0.3.sql.
 */

ALTER TABLE inbox.registry ADD COLUMN shard_key pg_catalog.name;

CREATE OR REPLACE VIEW inbox.inboxes WITH (security_barrier) AS
    SELECT r.relid AS inbox,
           n.nspname AS schema_name,
           c.relname AS table_name,
           r.key_type,
           r.retention,
           r.created_at,
           r.shard_key
      FROM inbox.registry r
      JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) r.relid::pg_catalog.oid
      JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace;

/*
 * Sharded inboxes (0.3): the primary key is (shard key, message_id), so that Citus
 * can distribute the inbox by the shard key and co-locate it with the table its
 * effects write; a claim and its effect then run on one node, in one local
 * transaction.  The constraint named idempotent_inbox marks the table as an inbox
 * on every node: Citus copies it to the workers with the table, where the registry
 * has no row.  The claim functions take the shard key value before the message id.
 */
CREATE FUNCTION inbox.create_sharded_inbox(name pg_catalog.text,
                                           shard_key pg_catalog.text,
                                           shard_key_type pg_catalog.regtype,
                                           key_type pg_catalog.regtype DEFAULT 'pg_catalog.text',
                                           retention pg_catalog.interval DEFAULT NULL)
RETURNS pg_catalog.regclass
AS 'MODULE_PATHNAME', 'inbox_create_sharded_inbox'
LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER;
COMMENT ON FUNCTION inbox.create_sharded_inbox(pg_catalog.text, pg_catalog.text, pg_catalog.regtype,
                                               pg_catalog.regtype, pg_catalog.interval) IS
    'create an inbox keyed by (shard_key, message_id), to distribute with the table its effects write';

CREATE FUNCTION inbox.claim_sharded(inbox pg_catalog.regclass, shard_key "any",
                                    message_id pg_catalog.text)
RETURNS boolean AS 'MODULE_PATHNAME', 'inbox_claim_sharded'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION inbox.claim_sharded(inbox pg_catalog.regclass, shard_key "any",
                                    message_id pg_catalog.uuid)
RETURNS boolean AS 'MODULE_PATHNAME', 'inbox_claim_sharded'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION inbox.claim_sharded(inbox pg_catalog.regclass, shard_key "any",
                                    message_id pg_catalog.int8)
RETURNS boolean AS 'MODULE_PATHNAME', 'inbox_claim_sharded'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION inbox.claim_sharded(pg_catalog.regclass, "any", pg_catalog.text) IS
    'claim a message id of a sharded inbox: true on first delivery, false on a duplicate';
COMMENT ON FUNCTION inbox.claim_sharded(pg_catalog.regclass, "any", pg_catalog.uuid) IS
    'claim a message id of a sharded inbox: true on first delivery, false on a duplicate';
COMMENT ON FUNCTION inbox.claim_sharded(pg_catalog.regclass, "any", pg_catalog.int8) IS
    'claim a message id of a sharded inbox: true on first delivery, false on a duplicate';

CREATE FUNCTION inbox.claim_apply_sharded(inbox pg_catalog.regclass, shard_key "any",
                                          message_id pg_catalog.text, statement pg_catalog.text)
RETURNS inbox.outcome AS 'MODULE_PATHNAME', 'inbox_claim_apply_sharded'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION inbox.claim_apply_sharded(inbox pg_catalog.regclass, shard_key "any",
                                          message_id pg_catalog.text, statement pg_catalog.text,
                                          VARIADIC args "any")
RETURNS inbox.outcome AS 'MODULE_PATHNAME', 'inbox_claim_apply_sharded'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION inbox.claim_apply_sharded(inbox pg_catalog.regclass, shard_key "any",
                                          message_id pg_catalog.uuid, statement pg_catalog.text)
RETURNS inbox.outcome AS 'MODULE_PATHNAME', 'inbox_claim_apply_sharded'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION inbox.claim_apply_sharded(inbox pg_catalog.regclass, shard_key "any",
                                          message_id pg_catalog.uuid, statement pg_catalog.text,
                                          VARIADIC args "any")
RETURNS inbox.outcome AS 'MODULE_PATHNAME', 'inbox_claim_apply_sharded'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION inbox.claim_apply_sharded(inbox pg_catalog.regclass, shard_key "any",
                                          message_id pg_catalog.int8, statement pg_catalog.text)
RETURNS inbox.outcome AS 'MODULE_PATHNAME', 'inbox_claim_apply_sharded'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION inbox.claim_apply_sharded(inbox pg_catalog.regclass, shard_key "any",
                                          message_id pg_catalog.int8, statement pg_catalog.text,
                                          VARIADIC args "any")
RETURNS inbox.outcome AS 'MODULE_PATHNAME', 'inbox_claim_apply_sharded'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION inbox.claim_apply_sharded(pg_catalog.regclass, "any", pg_catalog.text, pg_catalog.text) IS
    'claim a message id of a sharded inbox and, on first delivery only, run the statement';
COMMENT ON FUNCTION inbox.claim_apply_sharded(pg_catalog.regclass, "any", pg_catalog.text, pg_catalog.text, "any") IS
    'claim a message id of a sharded inbox and, on first delivery only, run the statement with $1..$n bound to args';
COMMENT ON FUNCTION inbox.claim_apply_sharded(pg_catalog.regclass, "any", pg_catalog.uuid, pg_catalog.text) IS
    'claim a message id of a sharded inbox and, on first delivery only, run the statement';
COMMENT ON FUNCTION inbox.claim_apply_sharded(pg_catalog.regclass, "any", pg_catalog.uuid, pg_catalog.text, "any") IS
    'claim a message id of a sharded inbox and, on first delivery only, run the statement with $1..$n bound to args';
COMMENT ON FUNCTION inbox.claim_apply_sharded(pg_catalog.regclass, "any", pg_catalog.int8, pg_catalog.text) IS
    'claim a message id of a sharded inbox and, on first delivery only, run the statement';
COMMENT ON FUNCTION inbox.claim_apply_sharded(pg_catalog.regclass, "any", pg_catalog.int8, pg_catalog.text, "any") IS
    'claim a message id of a sharded inbox and, on first delivery only, run the statement with $1..$n bound to args';

CREATE FUNCTION inbox.claim_many_sharded(inbox pg_catalog.regclass, shard_key "any",
                                         message_ids pg_catalog.text[])
RETURNS SETOF pg_catalog.text AS 'MODULE_PATHNAME', 'inbox_claim_many_sharded'
LANGUAGE C VOLATILE PARALLEL UNSAFE ROWS 100;
CREATE FUNCTION inbox.claim_many_sharded(inbox pg_catalog.regclass, shard_key "any",
                                         message_ids pg_catalog.uuid[])
RETURNS SETOF pg_catalog.uuid AS 'MODULE_PATHNAME', 'inbox_claim_many_sharded'
LANGUAGE C VOLATILE PARALLEL UNSAFE ROWS 100;
CREATE FUNCTION inbox.claim_many_sharded(inbox pg_catalog.regclass, shard_key "any",
                                         message_ids pg_catalog.int8[])
RETURNS SETOF pg_catalog.int8 AS 'MODULE_PATHNAME', 'inbox_claim_many_sharded'
LANGUAGE C VOLATILE PARALLEL UNSAFE ROWS 100;
COMMENT ON FUNCTION inbox.claim_many_sharded(pg_catalog.regclass, "any", pg_catalog.text[]) IS
    'claim a batch of one shard key value; returns the fresh ids in input order, each once';
COMMENT ON FUNCTION inbox.claim_many_sharded(pg_catalog.regclass, "any", pg_catalog.uuid[]) IS
    'claim a batch of one shard key value; returns the fresh ids in input order, each once';
COMMENT ON FUNCTION inbox.claim_many_sharded(pg_catalog.regclass, "any", pg_catalog.int8[]) IS
    'claim a batch of one shard key value; returns the fresh ids in input order, each once';

-- 0.2 said only create_inbox and drop_inbox write the registry; set_retention, the drop
-- event trigger and create_sharded_inbox write it too.
COMMENT ON TABLE inbox.registry IS
    'one row per inbox table; written only by the extension''s functions and its drop event trigger';

/*
 * claim_apply_many: a consumer's poll in one call.  Every id is claimed as by
 * claim_many, and the statement runs once over the fresh messages only: $1 is the
 * array of fresh ids (of the inbox's key type, in input order, each once), and
 * each further argument is an array with one element per id, which reaches the
 * statement as $2, $3, ... cut down to the same positions.  One row per id comes
 * back, in input order: applied for the first occurrence of a fresh id, duplicate
 * otherwise.  The variadic shapes are claim_apply's; message_ids may also be an
 * array literal, as drivers send arrays.
 */
CREATE FUNCTION inbox.claim_apply_many(inbox pg_catalog.regclass, message_ids pg_catalog.text[],
                                       statement pg_catalog.text)
RETURNS TABLE (message_id pg_catalog.text, outcome inbox.outcome) AS 'MODULE_PATHNAME', 'inbox_claim_apply_many'
LANGUAGE C VOLATILE PARALLEL UNSAFE ROWS 100;
CREATE FUNCTION inbox.claim_apply_many(inbox pg_catalog.regclass, message_ids pg_catalog.text[],
                                       statement pg_catalog.text, VARIADIC args "any")
RETURNS TABLE (message_id pg_catalog.text, outcome inbox.outcome) AS 'MODULE_PATHNAME', 'inbox_claim_apply_many'
LANGUAGE C VOLATILE PARALLEL UNSAFE ROWS 100;
CREATE FUNCTION inbox.claim_apply_many(inbox pg_catalog.regclass, message_ids pg_catalog.text[],
                                       statement pg_catalog.text, VARIADIC args pg_catalog.text[])
RETURNS TABLE (message_id pg_catalog.text, outcome inbox.outcome) AS 'MODULE_PATHNAME', 'inbox_claim_apply_many'
LANGUAGE C VOLATILE PARALLEL UNSAFE ROWS 100;
CREATE FUNCTION inbox.claim_apply_many(inbox pg_catalog.regclass, message_ids pg_catalog.uuid[],
                                       statement pg_catalog.text)
RETURNS TABLE (message_id pg_catalog.uuid, outcome inbox.outcome) AS 'MODULE_PATHNAME', 'inbox_claim_apply_many'
LANGUAGE C VOLATILE PARALLEL UNSAFE ROWS 100;
CREATE FUNCTION inbox.claim_apply_many(inbox pg_catalog.regclass, message_ids pg_catalog.uuid[],
                                       statement pg_catalog.text, VARIADIC args "any")
RETURNS TABLE (message_id pg_catalog.uuid, outcome inbox.outcome) AS 'MODULE_PATHNAME', 'inbox_claim_apply_many'
LANGUAGE C VOLATILE PARALLEL UNSAFE ROWS 100;
CREATE FUNCTION inbox.claim_apply_many(inbox pg_catalog.regclass, message_ids pg_catalog.uuid[],
                                       statement pg_catalog.text, VARIADIC args pg_catalog.text[])
RETURNS TABLE (message_id pg_catalog.uuid, outcome inbox.outcome) AS 'MODULE_PATHNAME', 'inbox_claim_apply_many'
LANGUAGE C VOLATILE PARALLEL UNSAFE ROWS 100;
CREATE FUNCTION inbox.claim_apply_many(inbox pg_catalog.regclass, message_ids pg_catalog.int8[],
                                       statement pg_catalog.text)
RETURNS TABLE (message_id pg_catalog.int8, outcome inbox.outcome) AS 'MODULE_PATHNAME', 'inbox_claim_apply_many'
LANGUAGE C VOLATILE PARALLEL UNSAFE ROWS 100;
CREATE FUNCTION inbox.claim_apply_many(inbox pg_catalog.regclass, message_ids pg_catalog.int8[],
                                       statement pg_catalog.text, VARIADIC args "any")
RETURNS TABLE (message_id pg_catalog.int8, outcome inbox.outcome) AS 'MODULE_PATHNAME', 'inbox_claim_apply_many'
LANGUAGE C VOLATILE PARALLEL UNSAFE ROWS 100;
CREATE FUNCTION inbox.claim_apply_many(inbox pg_catalog.regclass, message_ids pg_catalog.int8[],
                                       statement pg_catalog.text, VARIADIC args pg_catalog.text[])
RETURNS TABLE (message_id pg_catalog.int8, outcome inbox.outcome) AS 'MODULE_PATHNAME', 'inbox_claim_apply_many'
LANGUAGE C VOLATILE PARALLEL UNSAFE ROWS 100;
CREATE FUNCTION inbox.claim_apply_many(inbox pg_catalog.regclass, message_ids pg_catalog.text,
                                       statement pg_catalog.text)
RETURNS TABLE (message_id pg_catalog.text, outcome inbox.outcome) AS 'MODULE_PATHNAME', 'inbox_claim_apply_many'
LANGUAGE C VOLATILE PARALLEL UNSAFE ROWS 100;
CREATE FUNCTION inbox.claim_apply_many(inbox pg_catalog.regclass, message_ids pg_catalog.text,
                                       statement pg_catalog.text, VARIADIC args "any")
RETURNS TABLE (message_id pg_catalog.text, outcome inbox.outcome) AS 'MODULE_PATHNAME', 'inbox_claim_apply_many'
LANGUAGE C VOLATILE PARALLEL UNSAFE ROWS 100;
CREATE FUNCTION inbox.claim_apply_many(inbox pg_catalog.regclass, message_ids pg_catalog.text,
                                       statement pg_catalog.text, VARIADIC args pg_catalog.text[])
RETURNS TABLE (message_id pg_catalog.text, outcome inbox.outcome) AS 'MODULE_PATHNAME', 'inbox_claim_apply_many'
LANGUAGE C VOLATILE PARALLEL UNSAFE ROWS 100;
COMMENT ON FUNCTION inbox.claim_apply_many(pg_catalog.regclass, pg_catalog.text[], pg_catalog.text) IS
    'claim a batch and run the statement once over the fresh ids ($1); one row per id, applied or duplicate';
COMMENT ON FUNCTION inbox.claim_apply_many(pg_catalog.regclass, pg_catalog.text[], pg_catalog.text, "any") IS
    'claim a batch and run the statement once over the fresh ids ($1) and their values ($2..$n, arrays cut to the same positions); one row per id, applied or duplicate';
COMMENT ON FUNCTION inbox.claim_apply_many(pg_catalog.regclass, pg_catalog.text[], pg_catalog.text, pg_catalog.text[]) IS
    'claim a batch and run the statement once over the fresh ids ($1) and their values, untyped arrays converted to the types of $2..$n; one row per id, applied or duplicate';
COMMENT ON FUNCTION inbox.claim_apply_many(pg_catalog.regclass, pg_catalog.uuid[], pg_catalog.text) IS
    'claim a batch and run the statement once over the fresh ids ($1); one row per id, applied or duplicate';
COMMENT ON FUNCTION inbox.claim_apply_many(pg_catalog.regclass, pg_catalog.uuid[], pg_catalog.text, "any") IS
    'claim a batch and run the statement once over the fresh ids ($1) and their values ($2..$n, arrays cut to the same positions); one row per id, applied or duplicate';
COMMENT ON FUNCTION inbox.claim_apply_many(pg_catalog.regclass, pg_catalog.uuid[], pg_catalog.text, pg_catalog.text[]) IS
    'claim a batch and run the statement once over the fresh ids ($1) and their values, untyped arrays converted to the types of $2..$n; one row per id, applied or duplicate';
COMMENT ON FUNCTION inbox.claim_apply_many(pg_catalog.regclass, pg_catalog.int8[], pg_catalog.text) IS
    'claim a batch and run the statement once over the fresh ids ($1); one row per id, applied or duplicate';
COMMENT ON FUNCTION inbox.claim_apply_many(pg_catalog.regclass, pg_catalog.int8[], pg_catalog.text, "any") IS
    'claim a batch and run the statement once over the fresh ids ($1) and their values ($2..$n, arrays cut to the same positions); one row per id, applied or duplicate';
COMMENT ON FUNCTION inbox.claim_apply_many(pg_catalog.regclass, pg_catalog.int8[], pg_catalog.text, pg_catalog.text[]) IS
    'claim a batch and run the statement once over the fresh ids ($1) and their values, untyped arrays converted to the types of $2..$n; one row per id, applied or duplicate';
COMMENT ON FUNCTION inbox.claim_apply_many(pg_catalog.regclass, pg_catalog.text, pg_catalog.text) IS
    'claim a batch and run the statement once over the fresh ids ($1); one row per id, applied or duplicate';
COMMENT ON FUNCTION inbox.claim_apply_many(pg_catalog.regclass, pg_catalog.text, pg_catalog.text, "any") IS
    'claim a batch and run the statement once over the fresh ids ($1) and their values ($2..$n, arrays cut to the same positions); one row per id, applied or duplicate';
COMMENT ON FUNCTION inbox.claim_apply_many(pg_catalog.regclass, pg_catalog.text, pg_catalog.text, pg_catalog.text[]) IS
    'claim a batch and run the statement once over the fresh ids ($1) and their values, untyped arrays converted to the types of $2..$n; one row per id, applied or duplicate';

-- The row named by the value of its table's primary key (a single column).  "any",
-- not anyelement, so that an untyped literal (or driver parameter) is read by the
-- key column type's input function, as the jsonb form reads a string; a value of
-- another type is cast as an INSERT would.  Not an overload of transition: with one,
-- every call passing an untyped jsonb literal would be ambiguous.
CREATE FUNCTION inbox.transition_key(target pg_catalog.regclass, key "any",
                                           state_column pg_catalog.text,
                                           from_states pg_catalog.text[], to_state pg_catalog.text)
RETURNS inbox.transition_outcome AS 'MODULE_PATHNAME', 'inbox_transition_key'
LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER;
COMMENT ON FUNCTION inbox.transition_key(pg_catalog.regclass, "any", pg_catalog.text, pg_catalog.text[], pg_catalog.text) IS
    'move the row with this primary key value to to_state if it is in one of from_states (NULL: the states the column''s machine allows)';

CREATE FUNCTION inbox.transition_key(target pg_catalog.regclass, key "any",
                                           state_column pg_catalog.text, to_state pg_catalog.text)
RETURNS inbox.transition_outcome AS 'MODULE_PATHNAME', 'inbox_transition_key'
LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER;
COMMENT ON FUNCTION inbox.transition_key(pg_catalog.regclass, "any", pg_catalog.text, pg_catalog.text) IS
    'move the row with this primary key value to to_state from any state the column''s machine allows';

-- The event trigger finds the registry and the positions in its own schema when it
-- runs (C), not by the name the schema had when it was created (PL/pgSQL): after
-- ALTER SCHEMA inbox RENAME, every DROP TABLE in the database failed, and a table
-- created under the old name would have been written with the owner's rights.
CREATE OR REPLACE FUNCTION inbox.forget_dropped_inboxes()
RETURNS event_trigger AS 'MODULE_PATHNAME', 'inbox_forget_dropped_inboxes'
LANGUAGE C SECURITY DEFINER
SET search_path = pg_catalog, pg_temp;

-- It runs for every command that drops objects: a table also goes with DROP TYPE
-- ... CASCADE (a typed table), DROP EXTENSION of another extension, and others,
-- which left registry rows naming no table (and the purge worker failing on them).
DROP EVENT TRIGGER idempotent_inbox_forget_dropped;
CREATE EVENT TRIGGER idempotent_inbox_forget_dropped
    ON sql_drop
    EXECUTE FUNCTION inbox.forget_dropped_inboxes();

/*
 * Consumer groups (0.3): a fencing generation per partition, offsets completed out
 * of order above the watermark, and the resume points of a topic.  Every stored
 * position stays as it is: a NULL offset (a partition fenced or claimed out of
 * order before anything below it was applied) and the generation are new.
 */
ALTER TABLE inbox.positions ALTER COLUMN "offset" DROP NOT NULL;
ALTER TABLE inbox.positions ADD COLUMN generation pg_catalog.int8
    CONSTRAINT positions_generation_check CHECK (generation OPERATOR(pg_catalog.>=) 0);
COMMENT ON TABLE inbox.positions IS
    'per inbox, topic and partition: the offset up to which every message is applied (NULL: none yet) and the fencing generation; written only by advance, claim_offset and fence';
COMMENT ON FUNCTION inbox.position(pg_catalog.regclass, pg_catalog.text, pg_catalog.int4) IS
    'the watermark of the partition: every offset up to it is applied (NULL if none); seek to the next one after a restart';

/*
 * Gaps (0.3): offsets completed above a partition's watermark, one row each, by
 * consumers that finish a partition's messages out of order (claim_offset).  The
 * completion of the offset just after the watermark moves it past every
 * contiguous entry here and deletes them; "previous" is the offset delivered
 * before this one, so that a partition whose offsets skip (compaction, Kafka's
 * transaction markers) still closes up.  At most
 * idempotent_inbox.max_completed_offsets entries per partition.
 */
CREATE TABLE inbox.completed_offsets (
    inbox        pg_catalog.regclass NOT NULL,
    topic        pg_catalog.text NOT NULL,
    "partition"  pg_catalog.int4 NOT NULL,
    "offset"     pg_catalog.int8 NOT NULL
                 CONSTRAINT completed_offsets_offset_check CHECK ("offset" OPERATOR(pg_catalog.>=) 0),
    previous     pg_catalog.int8 NOT NULL
                 CONSTRAINT completed_offsets_previous_check
                 CHECK (previous OPERATOR(pg_catalog.>=) -1 AND previous OPERATOR(pg_catalog.<) "offset"),
    completed_at pg_catalog.timestamptz NOT NULL DEFAULT pg_catalog.now(),
    PRIMARY KEY (inbox, topic, "partition", "offset")
);
COMMENT ON TABLE inbox.completed_offsets IS
    'offsets applied above the watermark of their partition; written only by claim_offset and advance';
SELECT pg_catalog.pg_extension_config_dump('inbox.completed_offsets', '');

/*
 * Each partition's watermark: the stored offset, moved past the entries above it
 * that follow on without a gap.  The completion that closes a gap moves the
 * stored offset itself, unless another transaction's entry it follows on from was
 * not committed yet; the next completion then moves it.  So readers take the
 * watermark from here.  Not for PUBLIC: inbox.streams filters it by the caller's
 * rights.  A break is an entry whose previous offset is past the entry before it
 * (or the stored offset); brk counts the breaks so far.
 */
CREATE VIEW inbox.partition_progress WITH (security_barrier) AS
    SELECT p.inbox, p.topic, p."partition",
           p."offset" AS stored_offset,
           COALESCE(s.absorbed, p."offset") AS watermark,
           p.generation, p.advanced_at,
           s.completed_above, s.gaps, s.completed
      FROM inbox.positions p,
           LATERAL (SELECT pg_catalog.max(y."offset") FILTER (WHERE y.brk OPERATOR(pg_catalog.=) 0) AS absorbed,
                           pg_catalog.count(*) FILTER (WHERE y.brk OPERATOR(pg_catalog.>) 0) AS completed_above,
                           COALESCE(pg_catalog.max(y.brk), 0) AS gaps,
                           COALESCE(pg_catalog.array_agg(y."offset" ORDER BY y."offset")
                                    FILTER (WHERE y.brk OPERATOR(pg_catalog.>) 0),
                                    '{}') AS completed
                      FROM (SELECT x."offset", pg_catalog.sum(x.b) OVER (ORDER BY x."offset") AS brk
                              FROM (SELECT c."offset",
                                           (c.previous OPERATOR(pg_catalog.>)
                                            COALESCE(pg_catalog.lag(c."offset") OVER (ORDER BY c."offset"),
                                                     p."offset", -1))::pg_catalog.int4 AS b
                                      FROM inbox.completed_offsets c
                                     WHERE c.inbox OPERATOR(pg_catalog.=) p.inbox
                                       AND c.topic OPERATOR(pg_catalog.=) p.topic
                                       AND c."partition" OPERATOR(pg_catalog.=) p."partition"
                                       AND c."offset" OPERATOR(pg_catalog.>) COALESCE(p."offset", -1)) x) y) s;
COMMENT ON VIEW inbox.partition_progress IS
    'every partition''s watermark, generation and offsets completed above it, for the extension''s functions';

-- Everyone sees the positions of the inboxes they may read.
-- has_table_privilege is NULL for a table that no longer exists: such rows are skipped.
CREATE OR REPLACE VIEW inbox.streams WITH (security_barrier) AS
    SELECT p.inbox, p.topic, p."partition", p.watermark AS "offset", p.advanced_at,
           p.generation, p.completed_above, p.gaps
      FROM inbox.partition_progress p
     WHERE pg_catalog.has_table_privilege(p.inbox::pg_catalog.oid, 'SELECT');
COMMENT ON VIEW inbox.streams IS
    'the partitions of the inboxes you may read: watermark, fencing generation, offsets completed above the watermark and the gaps between them';
GRANT SELECT ON inbox.streams TO PUBLIC;

-- Generations (0.3): fencing a partition against a consumer that lost it.
CREATE FUNCTION inbox.advance(inbox pg_catalog.regclass, topic pg_catalog.text,
                              "partition" pg_catalog.int4, "offset" pg_catalog.int8,
                              generation pg_catalog.int8)
RETURNS boolean AS 'MODULE_PATHNAME', 'inbox_advance'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION inbox.advance(pg_catalog.regclass, pg_catalog.text, pg_catalog.int4, pg_catalog.int8, pg_catalog.int8) IS
    'advance, refused (55I02) if the partition belongs to a newer generation; a newer one takes it over';

CREATE FUNCTION inbox.fence(inbox pg_catalog.regclass, topic pg_catalog.text,
                            "partition" pg_catalog.int4, generation pg_catalog.int8)
RETURNS boolean AS 'MODULE_PATHNAME', 'inbox_fence'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION inbox.fence(pg_catalog.regclass, pg_catalog.text, pg_catalog.int4, pg_catalog.int8) IS
    'hold the partition for generation until commit, before claims: true if it took the partition over, false if it had it; 55I02 if a newer generation has it';

CREATE FUNCTION inbox.claim_offset(inbox pg_catalog.regclass, topic pg_catalog.text,
                                   "partition" pg_catalog.int4, "offset" pg_catalog.int8,
                                   generation pg_catalog.int8 DEFAULT NULL,
                                   previous pg_catalog.int8 DEFAULT NULL)
RETURNS boolean AS 'MODULE_PATHNAME', 'inbox_claim_offset'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION inbox.claim_offset(pg_catalog.regclass, pg_catalog.text, pg_catalog.int4, pg_catalog.int8, pg_catalog.int8, pg_catalog.int8) IS
    'record one offset as applied in this transaction, in any order: true if fresh, false if at or below the watermark or completed already';

CREATE FUNCTION inbox.resume_points(inbox pg_catalog.regclass, topic pg_catalog.text,
                                    OUT "partition" pg_catalog.int4, OUT "offset" pg_catalog.int8,
                                    OUT seek_to pg_catalog.int8, OUT generation pg_catalog.int8,
                                    OUT completed pg_catalog.int8[])
RETURNS SETOF record AS 'MODULE_PATHNAME', 'inbox_resume_points'
LANGUAGE C STABLE PARALLEL UNSAFE;
COMMENT ON FUNCTION inbox.resume_points(pg_catalog.regclass, pg_catalog.text) IS
    'every stored partition of the topic: watermark, where to seek, generation, and the offsets completed above the watermark (skip them)';
