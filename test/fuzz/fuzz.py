#!/usr/bin/env python3
"""Fuzzer for idempotent_inbox: sqlsmith plus a hostile-argument driver.

Runs against its own throwaway cluster (--cluster DIR: initdb, the library in
shared_preload_libraries, started and stopped here) or an existing one (--host,
--port).  Everything is derived from --seed, so a run is reproducible (up to where the time
limit cuts it: a loaded machine runs fewer cases).  Prints TAP:
one "ok" line per oracle that found nothing and one "not ok" line per distinct
defect class (function + outcome + kind of argument), each followed on stderr by a
minimal reproduction.  See test/fuzz/README.md.

Oracles: a server crash (lost connection, "terminated by signal" in the server log);
an internal error (SQLSTATE XX000, XX001, XX002); a hang (statement_timeout, or a
statement that ignores cancellation); a wrong answer (one id claimed fresh twice, two
live leases on one key, a role without rights getting an answer); a resource-leak
WARNING; a shared view that one role can break for everyone.
"""
import argparse
import os
import random
import re
import shutil
import subprocess
import sys
import threading
import time
import traceback

import psycopg

# The extension's C sources, to tell its own errors from core's.
REPO_SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "src")

DB = "fuzz_inbox"
OWNER = "fuzz_owner"
NOBODY = "fuzz_nobody"
EXT = "idempotent_inbox"


# ---------------------------------------------------------------------------
# Value pools: (kind, SQL expression).  Expressions, not literals, so that a
# reproduction stays short even for a 1 MB value.
# ---------------------------------------------------------------------------

RELATIONS = [
    ("inbox_text", "'fz.ti'"), ("inbox_uuid", "'fz.ui'"), ("inbox_bigint", "'fz.bi'"),
    ("inbox_retention_1s", "'fz.rt'"), ("dedup_inbox", "'fz.events_seen'"),
    ("catalog", "'pg_catalog.pg_class'"), ("shared_catalog", "'pg_catalog.pg_database'"),
    ("catalog_index", "'pg_catalog.pg_class_oid_index'"), ("toast_table", "'pg_toast.pg_toast_1255'"),
    ("inbox_index", "'fz.ti_pkey'"), ("view", "'fz.v'"), ("info_schema_view", "'information_schema.tables'"),
    ("matview", "'fz.mv'"), ("partitioned", "'fz.part'"), ("partition", "'fz.part_1'"),
    ("unlogged_inbox_shape", "'fz.unl'"), ("sequence", "'fz.seq'"), ("foreign_table", "'fz.ft'"),
    ("composite_type", "'fz.ct'"), ("registry", "'inbox.registry'"), ("positions", "'inbox.positions'"),
    ("lease_tokens", "'inbox.lease_tokens'"), ("inbox_shape_unregistered", "'fz.shape'"),
    ("state_machine_table", "'fz.orders'"), ("table_without_pk", "'fz.nopk'"),
    ("generated_column_table", "'fz.gen'"), ("dedup_target", "'fz.events'"),
    ("inherited_parent", "'fz.inh'"), ("oid0", "0"), ("oid_max", "4294967295"),
    ("dropped_oid", "{dropped_oid}"), ("null", "NULL"),
    ("temp_table", "'pg_temp.tt'"), ("temp_partitioned", "'pg_temp.tp'"),
    ("temp_inbox_shape", "'pg_temp.tshape'"), ("outbox", "'fz.ob'"),
    ("outbox_registry", "'inbox.outbox_registry'"),
    ("sharded_inbox", "'fz.sb'"), ("sharded_inbox_uuid_key", "'fz.st'"),
    ("sharded_inbox_quoted_key", "'fz.s4'"), ("marker_shape_unregistered", "'fz.sshape'"),
]
TEMP_SETUP = {
    "temp_table": "CREATE TEMP TABLE tt (id bigint PRIMARY KEY, status text, message_id text, version int)",
    "temp_partitioned": "CREATE TEMP TABLE tp (id bigint PRIMARY KEY, status text, message_id text) "
                        "PARTITION BY RANGE (id)",
    "temp_inbox_shape": "CREATE TEMP TABLE tshape (LIKE fz.ti INCLUDING ALL)",
    "temp_composite": "CREATE TYPE pg_temp.tct AS (a int)",
    "temp_composite_array": "CREATE TYPE pg_temp.tct AS (a int)",
    "temp_table_rowtype": "CREATE TEMP TABLE tt (id bigint PRIMARY KEY, status text, message_id text, version int)",
    "temp_domain": "CREATE DOMAIN pg_temp.tdom AS int CHECK (VALUE > 0)",
    "domain_over_temp_composite": "CREATE TYPE pg_temp.tct AS (a int); CREATE DOMAIN fz.dtct AS pg_temp.tct",
}
INBOX_OF_KEY = {"text": ("inbox_text", "'fz.ti'"), "uuid": ("inbox_uuid", "'fz.ui'"),
                "bigint": ("inbox_bigint", "'fz.bi'")}

TEXT_IDS = [
    ("null", "NULL"), ("empty", "''"), ("fresh", "'f-{n}'"), ("claimed", "'a'"),
    ("completed_lease", "'done1'"), ("live_lease", "'lease1'"), ("huge_1MB", "repeat('x', 1048576)"),
    ("len1024", "repeat('y', 1024)"), ("len1025", "repeat('y', 1025)"),
    ("multibyte_over_limit", "repeat('é', 513)"), ("unicode", "'ключ-🔑-{n}'"),
    ("uuid_text", "'00000000-0000-0000-0000-000000000001'"), ("bigint_text", "'1'"),
    ("not_a_number", "'12abc'"), ("space", "' '"), ("quote", "'x''); DROP TABLE fz.orders; --'"),
]
UUID_IDS = [
    ("null", "NULL"), ("nil", "'00000000-0000-0000-0000-000000000000'"),
    ("claimed", "'00000000-0000-0000-0000-000000000001'"),
    ("completed_lease", "'00000000-0000-0000-0000-0000000000d1'"),
    ("live_lease", "'00000000-0000-0000-0000-0000000000a1'"),
    ("fresh", "md5('{n}')::uuid"), ("max", "'ffffffff-ffff-ffff-ffff-ffffffffffff'"),
]
BIGINT_IDS = [
    ("null", "NULL"), ("zero", "0"), ("negative", "-1"), ("claimed", "1"), ("completed_lease", "12"),
    ("live_lease", "11"), ("fresh", "{n}"), ("max", "9223372036854775807"),
    ("min", "-9223372036854775808"),
]
ARRAYS = {
    "text[]": [("null", "NULL"), ("empty", "'{}'"), ("null_element", "'{NULL}'"),
               ("duplicates", "'{f-{n},f-{n},a}'"), ("fresh", "ARRAY['f-{n}', 'g-{n}']"),
               ("ten_thousand", "(SELECT array_agg('m-{n}-' || g) FROM generate_series(1, 10000) g)"),
               ("huge_element", "ARRAY[repeat('x', 1048576)]"), ("two_dim", "'{{a,b},{c,d}}'"),
               ("lower_bound_5", "'[5:6]={f-{n},h-{n}}'"), ("empty_element", "'{\"\"}'")],
    "uuid[]": [("null", "NULL"), ("empty", "'{}'"), ("null_element", "'{NULL}'"),
               ("fresh", "ARRAY[md5('{n}')::uuid, md5('{n}x')::uuid]"),
               ("two_dim", "ARRAY[ARRAY[md5('{n}')::uuid], ARRAY[md5('{n}y')::uuid]]"),
               ("ten_thousand", "(SELECT array_agg(md5(g::text || '{n}')::uuid) FROM generate_series(1, 10000) g)")],
    "bigint[]": [("null", "NULL"), ("empty", "'{}'"), ("null_element", "'{NULL}'"),
                 ("fresh", "ARRAY[{n}, {n} + 1, {n}]"), ("two_dim", "'{{1,2},{3,4}}'"),
                 ("lower_bound_5", "'[5:6]={7,8}'"),
                 ("ten_thousand", "(SELECT array_agg(g + {n}) FROM generate_series(1, 10000) g)")],
}
JSONB = [
    ("null", "NULL"), ("empty_object", "'{}'"), ("array", "'[]'"), ("json_null", "'null'"),
    ("number", "'1'"), ("string", "'\"s\"'"), ("order_key", "'{\"id\": 1}'"),
    ("order_row", "'{\"id\": {n}, \"status\": \"PENDING\", \"amount\": 5, \"version\": 2}'"),
    ("null_key", "'{\"id\": null}'"), ("huge_number", "'{\"id\": 1e400}'"), ("fraction_key", "'{\"id\": 1.5}'"),
    ("unknown_column", "'{\"id\": 1, \"nosuch\": 1}'"), ("system_column", "'{\"id\": 1, \"ctid\": \"(0,1)\"}'"),
    ("generated_column", "'{\"id\": 1, \"g\": 5}'"),
    ("edges", "'{\"PENDING\": [\"PAID\"], \"PAID\": [\"SHIPPED\"]}'"),
    ("edges_not_strings", "'{\"A\": [1, null, {}]}'"), ("edges_scalar", "'{\"A\": \"B\"}'"),
    ("edges_empty_names", "'{\"\": [\"\"]}'"),
    ("huge_object", "(SELECT jsonb_object_agg('k' || g, g) FROM generate_series(1, 100000) g)"),
    ("huge_string", "jsonb_build_object('id', 1, 'status', repeat('s', 1048576))"),
    ("deep_array", "(repeat('[', 5000) || repeat(']', 5000))::jsonb"),
    ("deep_object", "(repeat('{\"a\":', 3000) || '1' || repeat('}', 3000))::jsonb"),
]
INTERVALS = [("null", "NULL"), ("one_second", "'1 second'"), ("zero", "'0'"), ("negative", "'-1 day'"),
             ("one_microsecond", "'1 microsecond'"), ("hour", "'1 hour'"),
             ("100000_years", "'100000 years'"), ("max", "'178000000 years'"),
             ("month_minus_days", "'1 month -40 days'")]
BYTEA = [("null", "NULL"), ("empty", "'\\x'"), ("fingerprint", "inbox.fingerprint('{\"a\": 1}')"),
         ("other_fingerprint", "inbox.fingerprint('{\"a\": 2}')"), ("nul", "'\\x00'"),
         ("huge_1MB", "decode(repeat('ab', 1048576), 'hex')")]
BOOLS = [("null", "NULL"), ("true", "true"), ("false", "false")]
INT4 = [("null", "NULL"), ("zero", "0"), ("negative", "-1"), ("one", "1"), ("max", "2147483647"),
        ("min", "-2147483648")]
INT2 = [("null", "NULL"), ("zero", "0"), ("negative", "-1"), ("one", "1"), ("two", "2"), ("max", "32767")]
TOKENS = [("null", "NULL"), ("zero", "0"), ("negative", "-1"), ("one", "1"), ("max", "9223372036854775807"),
          ("current", "(SELECT max(token) FROM fz.ti)")]
REGTYPES = [("null", "NULL"), ("text", "'text'"), ("uuid", "'uuid'"), ("bigint", "'bigint'"),
            ("int4", "'int4'"), ("varchar", "'varchar'"), ("oid0", "0"), ("oid_max", "4294967295"),
            ("anyelement", "'anyelement'"), ("record", "'record'"), ("domain_over_text", "'fz.dtext'"),
            ("enum", "'inbox.outcome'"), ("array", "'bigint[]'"), ("name", "'name'"),
            ("composite", "'fz.ct'")]
NAMES = [("null", "NULL"), ("empty", "''"), ("new", "'fz.new_{n}'"), ("existing_inbox", "'fz.ti'"),
         ("existing_table", "'fz.orders'"), ("catalog_schema", "'pg_catalog.x{n}'"),
         ("extension_schema", "'inbox.x{n}'"), ("temp_schema", "'pg_temp.x{n}'"),
         ("missing_schema", "'nosuch.x'"), ("long_name", "repeat('n', 100)"),
         ("dotted_quoted", "'\"a.b\".c'"), ("quote_in_name", "'fz.\"we\"\"ird{n}\"'"),
         ("four_parts", "'a.b.c.d'"), ("huge_1MB", "repeat('n', 1048576)"), ("public", "'public.p{n}'"),
         ("view_name", "'fz.v'")]
COLUMNS = [("null", "NULL"), ("empty", "''"), ("status", "'status'"), ("id", "'id'"),
           ("version", "'version'"), ("amount", "'amount'"), ("missing", "'nosuch'"),
           ("message_id", "'message_id'"), ("ctid", "'ctid'"), ("xmin", "'xmin'"),
           ("tableoid", "'tableoid'"), ("generated", "'g'"), ("huge", "repeat('c', 100000)"),
           ("dropped_column", "'........pg.dropped.2........'")]
STATES = [("null", "NULL"), ("empty", "''"), ("paid", "'PAID'"), ("pending", "'PENDING'"),
          ("shipped", "'SHIPPED'"), ("unknown", "'NOPE'"), ("huge", "repeat('S', 1048576)")]
STATE_ARRAYS = [("null", "NULL"), ("empty", "'{}'"), ("pending", "'{PENDING}'"), ("null_element", "'{NULL}'"),
                ("two_dim", "'{{PENDING},{PAID}}'"), ("many", "(SELECT array_agg(g::text) FROM generate_series(1, 10000) g)")]
TOPICS = [("null", "NULL"), ("empty", "''"), ("topic", "'orders'"), ("fresh", "'t-{n}'"),
          ("len1025", "repeat('t', 1025)"), ("huge", "repeat('t', 1048576)"), ("unicode", "'тема'")]
KEY_ARRAYS = [("null", "NULL"), ("empty", "'{}'"), ("id", "'{id}'"), ("missing", "'{nosuch}'"),
              ("null_element", "'{NULL}'"), ("two", "'{id,status}'"), ("system", "'{ctid}'"),
              ("duplicated", "'{id,id}'")]
ROWS = [("orders_row", "(SELECT o FROM fz.orders o ORDER BY id LIMIT 1)"),
        ("orders_new", "ROW({n}, 'PENDING', 5, 1)::fz.orders"), ("null_orders", "NULL::fz.orders"),
        ("anonymous_record", "ROW(1, 'x')"), ("catalog_row", "(SELECT c FROM pg_class c LIMIT 1)"),
        ("partitioned_row", "ROW(5, 'PENDING', 'm')::fz.part"), ("partition_row", "ROW(6, 'x', 'm')::fz.part_1"),
        ("scalar", "1"), ("text_scalar", "'x'::text"), ("inbox_row", "(SELECT t FROM fz.ti t LIMIT 1)"),
        ("composite_type", "ROW(1, 'x')::fz.ct"), ("view_row", "(SELECT v FROM fz.v v LIMIT 1)"),
        ("matview_row", "(SELECT m FROM fz.mv m LIMIT 1)"), ("generated_row", "ROW(1, 's', 9)::fz.gen"),
        ("temp_partitioned_row", "ROW(1, 'x', 'm')::pg_temp.tp"), ("foreign_row", "ROW('m', now())::fz.ft"),
        ("registry_row", "(SELECT r FROM inbox.registry r LIMIT 1)"),
        ("positions_row", "(SELECT p FROM inbox.positions p LIMIT 1)")]
TGARGS = [("null", "NULL"), ("empty", "'\\x'"), ("one_arg", "'\\x6100'"), ("unterminated", "'\\x61'"),
          ("invalid_utf8", "'\\xff00'"), ("second_unterminated", "'\\x610062'"),
          ("huge", "decode(repeat('61', 1000000), 'hex')"),
          ("real", "(SELECT tgargs FROM pg_trigger WHERE tgname = 'dedup' LIMIT 1)")]
ANY_VALUES = [("int", "1"), ("text", "'x'::text"), ("null", "NULL"), ("timestamptz", "now()"),
              ("jsonb", "'{}'::jsonb"), ("huge_text", "repeat('v', 1048576)"), ("array", "ARRAY[1, 2]"),
              ("record", "ROW(1, 2)"), ("untyped", "'u'"), ("numeric", "1.5"),
              ("regclass", "'fz.ti'::regclass")]

# Sharded inboxes of the prepared database: relation -> (key type, shard key as an SQL
# identifier, shard key type, a good shard key value; {n} makes it fresh).  Each holds
# claims under the shard key value CLAIMED_SHARD[relation].
SHARDED = {
    "fz.sb": ("text", "acct", "bigint", "{n}"),
    "fz.s4": ("text", '"Acct Id"', "int4", "({n} % 1000000)"),
    "fz.st": ("uuid", "tenant", "text", "'t-{n}'"),
    "fz.sd": ("uuid", "acct", "fz.dpos", "({n} + 1)"),
    "fz.su": ("bigint", "region", "uuid", "md5('s{n}')::uuid"),
    "fz.sx": ("bigint", '"Message_Id"', "text", "'x{n}'"),
}
CLAIMED_SHARD = {"fz.sb": "1", "fz.s4": "1", "fz.st": "'1'", "fz.sd": "1",
                 "fz.su": "'00000000-0000-0000-0000-000000000001'::uuid", "fz.sx": "'1'"}
# Shard key values given as the "any" argument of the _sharded functions.
SHARD_VALUES = [
    ("null", "NULL"), ("typed_null", "NULL::bigint"), ("untyped_literal", "'{n}'"),
    ("claimed_literal", "'1'"), ("int", "1"), ("int_fresh", "{n}"), ("bigint", "{n}::bigint"),
    ("int2", "1::int2"), ("text", "'1'::text"), ("varchar", "'1'::varchar"), ("name", "'1'::name"),
    ("bpchar_padded", "'1'::char(3)"), ("numeric_integral", "1.0"), ("numeric_fraction", "1.5"),
    ("numeric_fraction_rounds_to_claimed", "0.6"), ("numeric_huge", "1e30"),
    ("float_nan", "'NaN'::float8"), ("float_fraction", "2.5::float8"), ("float_inf", "'Infinity'::float8"),
    ("float4_lossy", "16777217::float4"), ("negative", "-1"), ("zero", "0"),
    ("int8_max", "9223372036854775807"), ("int8_min", "(-9223372036854775807 - 1)"),
    ("uuid", "md5('{n}')::uuid"), ("uuid_claimed", "'00000000-0000-0000-0000-000000000001'::uuid"),
    ("uuid_literal", "'00000000-0000-0000-0000-000000000001'"), ("timestamptz", "now()"),
    ("date", "current_date"), ("jsonb", "'1'::jsonb"), ("json", "'1'::json"), ("bool", "true"),
    ("bytea", "'\\x01'::bytea"), ("empty_text", "''"), ("space_padded", "' 1 '"), ("plus_sign", "'+1'"),
    ("hex", "'0x1F'"), ("exponent_text", "'1e3'"), ("huge_text_1MB", "repeat('v', 1048576)"),
    ("incompressible_3KB", "(SELECT string_agg(md5(g::text || '{n}'), '') FROM generate_series(1, 100) g)"),
    ("array", "ARRAY[1, 2]"), ("text_array", "ARRAY['1']"), ("empty_array", "'{}'::int[]"),
    ("two_dim_array", "'{{1},{2}}'::int[]"), ("record", "ROW(1, 2)"), ("composite", "ROW(1, 'x')::fz.ct"),
    ("inbox_row", "(SELECT t FROM fz.ti t LIMIT 1)"), ("regclass", "'fz.ti'::regclass"), ("oid", "1::oid"),
    ("void", "pg_sleep(0)"), ("cstring", "textout('1')"),
    ("anyarray", "(SELECT histogram_bounds FROM pg_stats WHERE histogram_bounds IS NOT NULL LIMIT 1)"),
    ("domain_value", "1::fz.dpos"), ("domain_text", "'abc'::fz.dtext"), ("interval", "'1 day'::interval"),
    ("range", "int4range(1, 2)"), ("unicode", "'ключ-🔑'"), ("multibyte_1000", "repeat('é', 1000)"),
    ("subquery_text", "(SELECT '1')"), ("enum", "'applied'::inbox.outcome"), ("tsvector", "'a'::tsvector"),
    ("money", "1::money"), ("inet", "'10.0.0.1'::inet"), ("point", "point(1, 2)"),
]
# Column names given to create_sharded_inbox as the shard key.
SHARD_NAMES = [
    ("null", "NULL"), ("empty", "''"), ("good", "'acct_{n}'"), ("message_id", "'message_id'"),
    ("Message_Id", "'Message_Id'"), ("MESSAGE_ID", "'MESSAGE_ID'"), ("claimed_at", "'claimed_at'"),
    ("Claimed_At", "'Claimed_At'"), ("result", "'result'"), ("token", "'token'"),
    ("holder_started", "'holder_started'"), ("quoted_message_id", "'\"message_id\"'"), ("space", "' '"),
    ("trailing_space", "'message_id '"), ("dot", "'a.b'"), ("double_quote", "'a\"b'"),
    ("single_quote", "'a''b'"), ("unicode", "'ключ🔑'"), ("multibyte_63_bytes", "repeat('é', 31) || 'x'"),
    ("multibyte_64_bytes", "repeat('é', 32)"), ("ascii_63", "repeat('k', 63)"), ("ascii_64", "repeat('k', 64)"),
    ("system_column", "'ctid'"), ("oid", "'oid'"), ("xmin", "'xmin'"), ("huge", "repeat('k', 1048576)"),
    ("sql_injection", "'k int, x text); DROP TABLE fz.orders; --'"), ("control_char", "E'k\\x01'"),
    ("newline", "E'k\\nj'"), ("percent", "'%s%n'"),
]
# Shard key types given to create_sharded_inbox, each with an untyped literal of it (or None).
SHARD_TYPES = [
    ("null", "NULL", None), ("bigint", "'bigint'", "'7'"), ("int4", "'int4'", "'7'"), ("text", "'text'", "'a'"),
    ("uuid", "'uuid'", "'00000000-0000-0000-0000-000000000007'"), ("varchar", "'varchar'", "'a'"),
    ("oid0", "0", None), ("oid_max", "4294967295", None), ("anyelement", "'anyelement'", None),
    ("record", "'record'", None), ("unknown", "'unknown'", None), ("cstring", "'cstring'", None),
    ("void", "'void'", None), ("trigger", "'trigger'", None), ("anyarray", "'anyarray'", None),
    ("shell_type", "'fz.shell'", None), ("domain_over_text_check", "'fz.dtext'", "'ab'"),
    ("domain_over_bigint_check", "'fz.dpos'", "'5'"), ("enum", "'inbox.outcome'", "'applied'"),
    ("array", "'bigint[]'", "'{1,2}'"), ("text_array", "'text[]'", "'{a}'"), ("name", "'name'", "'n'"),
    ("composite", "'fz.ct'", "'(1,x)'"), ("inbox_rowtype", "'fz.ti'", None), ("json", "'json'", "'1'"),
    ("point", "'point'", None), ("character", "'character'", "'ab'"), ("bpchar", "'bpchar'", "'ab'"),
    ("bit", "'bit'", "'101'"), ("varbit", "'varbit'", "'101'"), ("char", "'\"char\"'", "'a'"),
    ("numeric", "'numeric'", "'1.5'"), ("float4", "'float4'", "'1.5'"), ("float8", "'float8'", "'1.5'"),
    ("tid", "'tid'", "'(0,1)'"), ("xid", "'xid'", None), ("jsonb", "'jsonb'", "'{\"a\": 1}'"),
    ("range", "'int4range'", "'[1,3)'"), ("regclass", "'regclass'", "'pg_class'"),
    ("oidvector", "'oidvector'", "'1 2'"), ("timestamptz", "'timestamptz'", "'2020-01-01'"),
    ("interval", "'interval'", "'1 day'"), ("bool", "'bool'", "'t'"), ("money", "'money'", "'1'"),
    ("temp_composite", "'pg_temp.tct'", "'(1)'"), ("temp_table_rowtype", "'pg_temp.tt'", None),
    ("temp_composite_array", "'pg_temp.tct[]'", "'{\"(1)\"}'"), ("temp_domain", "'pg_temp.tdom'", "'1'"),
    ("domain_over_temp_composite", "'fz.dtct'", None), ("varchar_name_like", "'character varying'", "'a'"),
]

GOOD_STATEMENT = "UPDATE fz.orders SET amount = amount WHERE id = 1"
STATEMENTS = [
    ("empty", ""), ("blank", "   "), ("semicolon", ";"), ("comment_only", "/* nothing */"),
    ("line_comment", "-- nothing"), ("select", "SELECT 1"), ("two_selects", "SELECT 1; SELECT 2"),
    ("two_updates", GOOD_STATEMENT + "; " + GOOD_STATEMENT), ("copy_to", "COPY fz.orders TO STDOUT"),
    ("copy_from", "COPY fz.orders FROM STDIN"), ("create_table", "CREATE TABLE fz.ca_{n} (x int)"),
    ("drop_table", "DROP TABLE fz.orders CASCADE"), ("truncate", "TRUNCATE fz.orders"),
    ("commit", "COMMIT"), ("rollback", "ROLLBACK"), ("begin", "BEGIN"), ("savepoint", "SAVEPOINT s"),
    ("release", "RELEASE SAVEPOINT s"), ("prepare_transaction", "PREPARE TRANSACTION 'fz'"),
    ("do_block", "DO $$BEGIN PERFORM 1; END$$"), ("do_commit", "DO $$BEGIN COMMIT; END$$"),
    ("drop_extension", "DROP EXTENSION idempotent_inbox CASCADE"),
    ("drop_extension_restrict", "DROP EXTENSION idempotent_inbox"),
    ("create_extension", "CREATE EXTENSION IF NOT EXISTS idempotent_inbox"),
    ("nested_claim_apply", "SELECT inbox.claim_apply('fz.ti', 'nested-{n}', 'SELECT 1')"),
    ("nested_claim_same_id", "SELECT inbox.claim('fz.ti', 'f-{n}')"),
    ("drop_inbox", "SELECT inbox.drop_inbox('fz.ti')"), ("vacuum", "VACUUM fz.orders"),
    ("explain_analyze", "EXPLAIN ANALYZE " + GOOD_STATEMENT), ("listen", "LISTEN fz"),
    ("set_role", "SET ROLE postgres"), ("reset_all", "RESET ALL"), ("discard", "DISCARD ALL"),
    ("set_search_path", "SET search_path = evil"), ("params", "UPDATE fz.orders SET amount = $1 WHERE id = $2"),
    ("bare_param", "$1"), ("select_param", "SELECT $1"), ("param_0", "SELECT $0"),
    ("param_huge", "SELECT $99999"), ("param_gap", "SELECT $2"),
    ("cte_delete", "WITH d AS (DELETE FROM fz.orders WHERE false RETURNING *) SELECT 1"),
    ("insert_own_inbox", "INSERT INTO fz.ti (message_id) VALUES ('f-{n}')"),
    ("delete_own_inbox", "DELETE FROM fz.ti"),
    ("alter_own_inbox", "ALTER TABLE fz.ti ALTER COLUMN result TYPE text"),
    ("drop_inbox_column", "ALTER TABLE fz.ti DROP COLUMN result"),
    ("huge_statement", "SELECT 1" + " " * 1048576),
    ("deep_expression", "SELECT " + "(" * 20000 + "1" + ")" * 20000),
    ("checkpoint", "CHECKPOINT"), ("lock", "LOCK fz.orders"),
    ("declare_cursor", "DECLARE c CURSOR FOR SELECT 1"), ("fetch", "FETCH ALL FROM c"),
    ("deallocate", "DEALLOCATE ALL"), ("select_for_update", "SELECT * FROM fz.orders FOR UPDATE"),
    ("merge", "MERGE INTO fz.orders o USING (SELECT 1 AS id) s ON o.id = s.id "
              "WHEN MATCHED THEN UPDATE SET amount = o.amount"),
    ("create_rule", "CREATE RULE r AS ON INSERT TO fz.ti DO ALSO NOTIFY fz"),
    ("grant", "GRANT SELECT ON fz.ti TO PUBLIC"), ("good", GOOD_STATEMENT),
]

# Changes an inbox's owner may make to it.  {t} is the table.
MUTATIONS = [
    ("message_id_to_text", "ALTER TABLE {t} ALTER COLUMN message_id TYPE text USING message_id::text"),
    ("message_id_to_bigint", "ALTER TABLE {t} ALTER COLUMN message_id TYPE bigint USING hashtext(message_id::text)"),
    ("message_id_to_uuid", "ALTER TABLE {t} ALTER COLUMN message_id TYPE uuid USING md5(message_id::text)::uuid"),
    ("message_id_to_int4", "ALTER TABLE {t} ALTER COLUMN message_id TYPE int4 USING hashtext(message_id::text)"),
    ("message_id_to_varchar3", "ALTER TABLE {t} ALTER COLUMN message_id TYPE varchar(40) USING message_id::text"),
    ("message_id_to_name", "ALTER TABLE {t} ALTER COLUMN message_id TYPE name USING message_id::text"),
    ("message_id_to_bytea", "ALTER TABLE {t} ALTER COLUMN message_id TYPE bytea USING convert_to(message_id::text, 'UTF8')"),
    ("message_id_to_domain", "ALTER TABLE {t} ALTER COLUMN message_id TYPE fz.dtext USING left(md5(message_id::text), 4)"),
    ("message_id_collate_nondeterministic", "ALTER TABLE {t} ALTER COLUMN message_id TYPE text COLLATE fz.ci USING message_id::text"),
    ("message_id_collate_posix", "ALTER TABLE {t} ALTER COLUMN message_id TYPE text COLLATE \"POSIX\" USING message_id::text"),
    ("result_to_text", "ALTER TABLE {t} ALTER COLUMN result TYPE text"),
    ("result_to_json", "ALTER TABLE {t} ALTER COLUMN result TYPE json"),
    ("result_to_bytea", "ALTER TABLE {t} ALTER COLUMN result TYPE bytea USING convert_to(result::text, 'UTF8')"),
    ("result_to_uuid", "ALTER TABLE {t} ALTER COLUMN result TYPE uuid USING NULL"),
    ("result_to_bigint", "ALTER TABLE {t} ALTER COLUMN result TYPE bigint USING NULL"),
    ("fingerprint_to_text", "ALTER TABLE {t} ALTER COLUMN fingerprint TYPE text"),
    ("fingerprint_to_uuid", "ALTER TABLE {t} ALTER COLUMN fingerprint TYPE uuid USING NULL"),
    ("fingerprint_to_jsonb", "ALTER TABLE {t} ALTER COLUMN fingerprint TYPE jsonb USING NULL"),
    ("lease_until_to_date", "ALTER TABLE {t} ALTER COLUMN lease_until TYPE date"),
    ("lease_until_to_timestamp", "ALTER TABLE {t} ALTER COLUMN lease_until TYPE timestamp"),
    ("lease_until_to_text", "ALTER TABLE {t} ALTER COLUMN lease_until TYPE text"),
    ("lease_until_to_bigint", "ALTER TABLE {t} ALTER COLUMN lease_until TYPE bigint USING NULL"),
    ("token_to_int4", "ALTER TABLE {t} ALTER COLUMN token TYPE int4"),
    ("token_to_text", "ALTER TABLE {t} ALTER COLUMN token TYPE text"),
    ("token_to_numeric", "ALTER TABLE {t} ALTER COLUMN token TYPE numeric"),
    ("claimed_at_to_date", "ALTER TABLE {t} ALTER COLUMN claimed_at TYPE date"),
    ("claimed_at_to_text", "ALTER TABLE {t} ALTER COLUMN claimed_at TYPE text"),
    ("claimed_at_drop_default", "ALTER TABLE {t} ALTER COLUMN claimed_at DROP DEFAULT"),
    ("claimed_at_drop_not_null", "ALTER TABLE {t} ALTER COLUMN claimed_at DROP NOT NULL"),
    ("holder_pid_to_bigint", "ALTER TABLE {t} ALTER COLUMN holder_pid TYPE bigint"),
    ("holder_pid_to_text", "ALTER TABLE {t} ALTER COLUMN holder_pid TYPE text"),
    ("holder_started_to_text", "ALTER TABLE {t} ALTER COLUMN holder_started TYPE text"),
    ("drop_result", "ALTER TABLE {t} DROP COLUMN result"),
    ("drop_fingerprint", "ALTER TABLE {t} DROP COLUMN fingerprint"),
    ("drop_token", "ALTER TABLE {t} DROP COLUMN token"),
    ("drop_lease_until", "ALTER TABLE {t} DROP COLUMN lease_until"),
    ("drop_claimed_at", "ALTER TABLE {t} DROP COLUMN claimed_at"),
    ("drop_holder_pid", "ALTER TABLE {t} DROP COLUMN holder_pid"),
    ("drop_holder_started", "ALTER TABLE {t} DROP COLUMN holder_started"),
    ("drop_message_id", "ALTER TABLE {t} DROP COLUMN message_id"),
    ("drop_and_readd_result", "ALTER TABLE {t} DROP COLUMN result; ALTER TABLE {t} ADD COLUMN result jsonb"),
    ("rename_result", "ALTER TABLE {t} RENAME COLUMN result TO old_result"),
    ("rename_message_id", "ALTER TABLE {t} RENAME COLUMN message_id TO id"),
    ("swap_token_holder_pid", "ALTER TABLE {t} RENAME COLUMN token TO tmp_col; "
                              "ALTER TABLE {t} RENAME COLUMN holder_pid TO token; "
                              "ALTER TABLE {t} RENAME COLUMN tmp_col TO holder_pid"),
    ("swap_result_fingerprint", "ALTER TABLE {t} RENAME COLUMN result TO tmp_col; "
                                "ALTER TABLE {t} RENAME COLUMN fingerprint TO result; "
                                "ALTER TABLE {t} RENAME COLUMN tmp_col TO fingerprint"),
    ("add_column_default", "ALTER TABLE {t} ADD COLUMN extra int NOT NULL DEFAULT 1"),
    ("add_column_volatile_default", "ALTER TABLE {t} ADD COLUMN extra float8 DEFAULT random()"),
    ("add_generated_column", "ALTER TABLE {t} ADD COLUMN g text GENERATED ALWAYS AS (message_id::text || 'g') STORED"),
    ("drop_primary_key", "ALTER TABLE {t} DROP CONSTRAINT {tn}_pkey"),
    ("primary_key_two_columns", "ALTER TABLE {t} DROP CONSTRAINT {tn}_pkey; ALTER TABLE {t} ADD PRIMARY KEY (message_id, claimed_at)"),
    ("primary_key_other_column", "ALTER TABLE {t} DROP CONSTRAINT {tn}_pkey; "
                                 "UPDATE {t} SET token = nextval('fz.seq'); ALTER TABLE {t} ADD PRIMARY KEY (token)"),
    ("unique_instead_of_pk", "ALTER TABLE {t} DROP CONSTRAINT {tn}_pkey; ALTER TABLE {t} ADD UNIQUE (message_id)"),
    ("pk_hash_like_opclass", "ALTER TABLE {t} DROP CONSTRAINT {tn}_pkey; "
                             "CREATE UNIQUE INDEX {tn}_pat ON {t} (message_id text_pattern_ops); "
                             "ALTER TABLE {t} ADD PRIMARY KEY USING INDEX {tn}_pat"),
    ("pk_expression_unique", "ALTER TABLE {t} DROP CONSTRAINT {tn}_pkey; "
                             "CREATE UNIQUE INDEX ON {t} (lower(message_id::text))"),
    ("pk_partial_unique", "ALTER TABLE {t} DROP CONSTRAINT {tn}_pkey; "
                          "CREATE UNIQUE INDEX ON {t} (message_id) WHERE token IS NULL"),
    ("check_constraint", "ALTER TABLE {t} ADD CONSTRAINT short_ids CHECK (length(message_id::text) < 40) NOT VALID"),
    ("drop_claimed_at_index", "DROP INDEX IF EXISTS fz.{tn}_claimed_at_idx"),
    ("before_insert_trigger_skip", "CREATE FUNCTION fz.skip_{tn}() RETURNS trigger LANGUAGE plpgsql AS "
                                   "$$BEGIN RETURN NULL; END$$; CREATE TRIGGER skip BEFORE INSERT ON {t} "
                                   "FOR EACH ROW EXECUTE FUNCTION fz.skip_{tn}()"),
    ("before_update_trigger_skip", "CREATE FUNCTION fz.skipu_{tn}() RETURNS trigger LANGUAGE plpgsql AS "
                                   "$$BEGIN RETURN NULL; END$$; CREATE TRIGGER skipu BEFORE UPDATE OR DELETE ON {t} "
                                   "FOR EACH ROW EXECUTE FUNCTION fz.skipu_{tn}()"),
    ("rule_do_instead_nothing", "CREATE RULE nothing AS ON INSERT TO {t} DO INSTEAD NOTHING"),
    ("rule_do_also", "CREATE RULE also AS ON INSERT TO {t} DO ALSO NOTIFY fz"),
    ("row_level_security_false", "ALTER TABLE {t} ENABLE ROW LEVEL SECURITY; ALTER TABLE {t} FORCE ROW LEVEL SECURITY; "
                                 "CREATE POLICY none ON {t} USING (false) WITH CHECK (false)"),
    ("set_unlogged", "ALTER TABLE {t} SET UNLOGGED"),
    ("rename_table", "ALTER TABLE {t} RENAME TO {tn}_renamed"),
    ("attach_as_partition", "CREATE TABLE fz.{tn}_parent (LIKE {t}) PARTITION BY HASH (message_id); "
                            "ALTER TABLE fz.{tn}_parent ATTACH PARTITION {t} FOR VALUES WITH (MODULUS 1, REMAINDER 0)"),
    ("inheritance_child", "CREATE TABLE fz.{tn}_child () INHERITS ({t})"),
    ("inherits_parent", "CREATE TABLE fz.{tn}_par (message_id text); ALTER TABLE {t} INHERIT fz.{tn}_par"),
    ("revoke_own_rights", "REVOKE ALL ON {t} FROM " + OWNER),
    ("message_id_default", "ALTER TABLE {t} ALTER COLUMN message_id SET DEFAULT NULL"),
    ("storage_external", "ALTER TABLE {t} ALTER COLUMN result SET STORAGE EXTERNAL"),
    ("truncate", "TRUNCATE {t}"),
    ("cluster", "CLUSTER {t} USING {tn}_pkey"),
    ("replica_identity_full", "ALTER TABLE {t} REPLICA IDENTITY FULL"),
]

# Bodies of an AFTER INSERT trigger on an inbox that calls back into the extension.
REENTRY = [
    ("grant_then_acquire", "GRANT SELECT ON fz.r TO PUBLIC; "
                           "PERFORM inbox.acquire('fz.r', NEW.message_id || '-l', '1 minute')"),
    ("claim_same_inbox", "IF length(NEW.message_id) < 6 THEN PERFORM inbox.claim('fz.r', NEW.message_id || 'y'); END IF"),
    ("claim_same_id", "PERFORM inbox.claim('fz.r', NEW.message_id)"),
    ("try_claim_same_id", "PERFORM inbox.try_claim('fz.r', NEW.message_id)"),
    ("claim_many", "PERFORM inbox.claim_many('fz.r', ARRAY[NEW.message_id || '-m', NEW.message_id])"),
    ("advance", "PERFORM inbox.advance('fz.r', 'topic', 0, length(NEW.message_id))"),
    ("claim_offset", "PERFORM inbox.claim_offset('fz.r', 'topic', 1, length(NEW.message_id), 1)"),
    ("fence_takeover", "PERFORM inbox.fence('fz.r', 'topic', 2, length(NEW.message_id))"),
    ("complete", "PERFORM inbox.complete('fz.r', NEW.message_id, '{\"r\": 1}')"),
    ("result", "PERFORM inbox.result('fz.r', NEW.message_id)"),
    ("grant_revoke", "GRANT SELECT ON fz.r TO PUBLIC; REVOKE SELECT ON fz.r FROM PUBLIC"),
    ("alter_table", "ALTER TABLE fz.r ALTER COLUMN result TYPE text"),
    ("add_column", "ALTER TABLE fz.r ADD COLUMN IF NOT EXISTS extra int"),
    ("drop_inbox", "PERFORM inbox.drop_inbox('fz.r')"),
    ("set_retention", "PERFORM inbox.set_retention('fz.r', '1 day')"),
    ("purge", "PERFORM inbox.purge('fz.r')"),
    ("claim_apply_nested", "PERFORM inbox.claim_apply('fz.r', NEW.message_id || '-a', 'SELECT 1')"),
    ("claim_apply_many_nested", "PERFORM inbox.claim_apply_many('fz.r', ARRAY[NEW.message_id || '-b', NEW.message_id], "
                                "'SELECT count(*) FROM unnest($1, $2::int[])', ARRAY[1, 2])"),
    ("create_other_inbox", "PERFORM inbox.create_inbox('fz.r_' || md5(NEW.message_id), 'text')"),
    ("guard_transitions", "PERFORM inbox.guard_transitions('fz.orders', 'status', '{\"PENDING\": [\"PAID\"]}')"),
    ("upsert", "PERFORM inbox.upsert('fz.orders', jsonb_build_object('id', 77, 'status', 'PENDING'))"),
    ("truncate_other", "DELETE FROM fz.r WHERE message_id <> NEW.message_id"),
    ("record_failure_same_id", "PERFORM inbox.record_failure('fz.r', NEW.message_id, 'boom', 'k')"),
    ("record_failure_other", "PERFORM inbox.record_failure('fz.r', NEW.message_id || '-f', 'boom')"),
    ("quarantine_other", "PERFORM inbox.set_max_attempts('fz.r', 1); "
                         "PERFORM inbox.record_failure('fz.r', NEW.message_id || '-q', 'boom', 'k')"),
    ("claim_in_order", "PERFORM inbox.set_key_ordering('fz.r', true); "
                       "PERFORM inbox.claim_in_order('fz.r', NEW.message_id || '-o', 'k')"),
    ("retry_same_id", "PERFORM inbox.retry('fz.r', NEW.message_id)"),
    ("discard_other", "PERFORM inbox.discard('fz.r', NEW.message_id || '-d')"),
    ("forget_same_id", "PERFORM inbox.forget('fz.r', NEW.message_id)"),
    ("emit", "PERFORM inbox.emit('fz.ob', 'claimed', NEW.message_id, jsonb_build_object('id', NEW.message_id))"),
    ("relay_take_ack", "PERFORM inbox.relay_ack('fz.ob', t.lease) FROM inbox.relay_take('fz.ob', 5) t"),
    ("drop_outbox", "PERFORM inbox.drop_outbox('fz.ob')"),
]
REENTRY_CALLS = [
    "SELECT inbox.claim('fz.r', 'a'), inbox.claim('fz.r', 'b')",
    "SELECT * FROM inbox.claim_many('fz.r', ARRAY['a', 'b', 'c'])",
    "SELECT inbox.claim_apply('fz.r', 'a', 'SELECT 1'), inbox.claim_apply('fz.r', 'b', 'SELECT 1')",
    "SELECT * FROM inbox.claim_apply_many('fz.r', ARRAY['a', 'b', 'a'], 'SELECT count(*) FROM unnest($1, $2::int[])', ARRAY[1, 2, 3])",
    "SELECT (inbox.acquire('fz.r', 'a', '1 minute')).*, (inbox.acquire('fz.r', 'b', '1 minute')).*",
    "SELECT inbox.try_claim('fz.r', 'a'), inbox.try_claim('fz.r', 'b')",
    "SELECT inbox.set_key_ordering('fz.r', true), inbox.claim_in_order('fz.r', 'a', 'k'), inbox.claim_in_order('fz.r', 'b', 'k')",
    "SELECT inbox.claim('fz.r', 'a', inbox.fingerprint('{}')), inbox.claim('fz.r', 'b', inbox.fingerprint('{}'))",
]

# Sharded inboxes the owner creates and changes: (shard key as given to
# create_sharded_inbox, as an SQL identifier, its type).
SHARD_CONFIGS = [("acct", "acct", "bigint"), ("tenant", "tenant", "text"), ("region", "region", "uuid"),
                 ("Acct Id", '"Acct Id"', "int4"), ("acct", "acct", "fz.dpos"),
                 ("Message_Id", '"Message_Id"', "text")]
# Changes an owner may make to a sharded inbox.  {t} is the table, {tn} its name, {sk}
# the shard key column, {st} its type.  Those marked lossy change what a shard key
# value is stored as, so the oracle does not compare the stored value with the given one.
SHARDED_MUTATIONS = [
    ("drop_shard_key", "ALTER TABLE {t} DROP COLUMN {sk}", False),
    ("rename_shard_key", "ALTER TABLE {t} RENAME COLUMN {sk} TO other_key", False),
    ("rename_shard_key_upper_case", "ALTER TABLE {t} RENAME COLUMN {sk} TO \"ACCT\"", False),
    ("shard_key_to_text", "ALTER TABLE {t} ALTER COLUMN {sk} TYPE text USING {sk}::text", False),
    ("shard_key_to_int4", "ALTER TABLE {t} ALTER COLUMN {sk} TYPE int4 USING hashtext({sk}::text)", True),
    ("shard_key_to_numeric_scale_2", "ALTER TABLE {t} ALTER COLUMN {sk} TYPE numeric(20,2) "
                                     "USING length({sk}::text) + 0.5", True),
    ("shard_key_to_float4", "ALTER TABLE {t} ALTER COLUMN {sk} TYPE float4 USING length({sk}::text)", True),
    ("shard_key_to_varchar3", "ALTER TABLE {t} ALTER COLUMN {sk} TYPE varchar(3) USING left({sk}::text, 3)", True),
    ("shard_key_to_char40", "ALTER TABLE {t} ALTER COLUMN {sk} TYPE char(40) USING {sk}::text", True),
    ("shard_key_to_domain_check", "ALTER TABLE {t} ALTER COLUMN {sk} TYPE fz.dtext "
                                  "USING left(md5({sk}::text), 4)", True),
    ("shard_key_to_jsonb", "ALTER TABLE {t} ALTER COLUMN {sk} TYPE jsonb USING to_jsonb({sk}::text)", True),
    ("shard_key_to_text_array", "ALTER TABLE {t} ALTER COLUMN {sk} TYPE text[] USING ARRAY[{sk}::text]", True),
    ("shard_key_collate_nondeterministic", "ALTER TABLE {t} ALTER COLUMN {sk} TYPE text COLLATE fz.ci "
                                           "USING {sk}::text", False),
    ("shard_key_collate_posix", "ALTER TABLE {t} ALTER COLUMN {sk} TYPE text COLLATE \"POSIX\" "
                                "USING {sk}::text", False),
    ("shard_key_identity_always", "ALTER TABLE {t} ALTER COLUMN {sk} ADD GENERATED ALWAYS AS IDENTITY", False),
    ("shard_key_identity_by_default", "ALTER TABLE {t} ALTER COLUMN {sk} ADD GENERATED BY DEFAULT AS IDENTITY",
     False),
    ("shard_key_default_null", "ALTER TABLE {t} ALTER COLUMN {sk} SET DEFAULT NULL", False),
    ("drop_marker", "ALTER TABLE {t} DROP CONSTRAINT idempotent_inbox", False),
    ("marker_check_false", "ALTER TABLE {t} DROP CONSTRAINT idempotent_inbox; "
                           "ALTER TABLE {t} ADD CONSTRAINT idempotent_inbox CHECK (false) NOT VALID", False),
    ("marker_renamed", "ALTER TABLE {t} RENAME CONSTRAINT idempotent_inbox TO was_marker", False),
    ("marker_on_shard_key", "ALTER TABLE {t} DROP CONSTRAINT idempotent_inbox; "
                            "ALTER TABLE {t} ADD CONSTRAINT idempotent_inbox CHECK ({sk} IS NOT NULL)", False),
    ("pk_reordered", "ALTER TABLE {t} DROP CONSTRAINT {tn}_pkey; ALTER TABLE {t} ADD PRIMARY KEY (message_id, {sk})",
     False),
    ("pk_message_id_only", "ALTER TABLE {t} DROP CONSTRAINT {tn}_pkey; ALTER TABLE {t} ADD PRIMARY KEY (message_id)",
     False),
    ("pk_shard_key_only", "ALTER TABLE {t} DROP CONSTRAINT {tn}_pkey; DELETE FROM {t}; "
                          "ALTER TABLE {t} ADD PRIMARY KEY ({sk})", False),
    ("pk_three_columns", "ALTER TABLE {t} DROP CONSTRAINT {tn}_pkey; "
                         "ALTER TABLE {t} ADD PRIMARY KEY ({sk}, message_id, claimed_at)", False),
    ("pk_include", "ALTER TABLE {t} DROP CONSTRAINT {tn}_pkey; "
                   "ALTER TABLE {t} ADD PRIMARY KEY ({sk}, message_id) INCLUDE (claimed_at)", False),
    ("pk_deferrable", "ALTER TABLE {t} DROP CONSTRAINT {tn}_pkey; "
                      "ALTER TABLE {t} ADD PRIMARY KEY ({sk}, message_id) DEFERRABLE INITIALLY DEFERRED", False),
    ("pk_dropped", "ALTER TABLE {t} DROP CONSTRAINT {tn}_pkey", False),
    ("unique_instead_of_pk", "ALTER TABLE {t} DROP CONSTRAINT {tn}_pkey; ALTER TABLE {t} ADD UNIQUE ({sk}, message_id)",
     False),
    ("pk_collate_c", "ALTER TABLE {t} DROP CONSTRAINT {tn}_pkey; CREATE UNIQUE INDEX {tn}_c ON {t} "
                     "({sk}, message_id COLLATE \"C\"); ALTER TABLE {t} ADD PRIMARY KEY USING INDEX {tn}_c", False),
    ("pk_hash_like_ops", "ALTER TABLE {t} DROP CONSTRAINT {tn}_pkey; CREATE UNIQUE INDEX {tn}_p ON {t} "
                         "({sk}, message_id text_pattern_ops); ALTER TABLE {t} ADD PRIMARY KEY USING INDEX {tn}_p",
     False),
    ("drop_and_readd_shard_key_as_text", "ALTER TABLE {t} DROP COLUMN {sk}; DELETE FROM {t}; "
                                         "ALTER TABLE {t} ADD COLUMN {sk} text NOT NULL; "
                                         "ALTER TABLE {t} ADD PRIMARY KEY ({sk}, message_id)", True),
    ("swap_shard_key_column", "ALTER TABLE {t} ADD COLUMN other_key {st}; UPDATE {t} SET other_key = {sk}; "
                              "ALTER TABLE {t} DROP CONSTRAINT {tn}_pkey; "
                              "ALTER TABLE {t} RENAME COLUMN {sk} TO old_key; "
                              "ALTER TABLE {t} RENAME COLUMN other_key TO {sk}; "
                              "ALTER TABLE {t} ALTER COLUMN {sk} SET NOT NULL; "
                              "ALTER TABLE {t} ADD PRIMARY KEY ({sk}, message_id)", False),
    ("trigger_shard_key_to_existing", "CREATE FUNCTION fz.tsk_{tn}() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN "
                                      "NEW.{sk} := coalesce((SELECT {sk} FROM {t} ORDER BY claimed_at, message_id "
                                      "LIMIT 1), NEW.{sk}); RETURN NEW; END$$; CREATE TRIGGER tsk BEFORE INSERT ON {t} "
                                      "FOR EACH ROW EXECUTE FUNCTION fz.tsk_{tn}()", False),
    ("trigger_shard_key_null", "CREATE FUNCTION fz.tsn_{tn}() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN "
                               "NEW.{sk} := NULL; RETURN NEW; END$$; CREATE TRIGGER tsn BEFORE INSERT ON {t} "
                               "FOR EACH ROW EXECUTE FUNCTION fz.tsn_{tn}()", False),
    ("trigger_id_to_existing", "CREATE FUNCTION fz.tid_{tn}() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN "
                               "NEW.message_id := coalesce((SELECT message_id FROM {t} ORDER BY claimed_at, "
                               "message_id LIMIT 1), NEW.message_id); RETURN NEW; END$$; CREATE TRIGGER tid "
                               "BEFORE INSERT ON {t} FOR EACH ROW EXECUTE FUNCTION fz.tid_{tn}()", False),
    ("trigger_skip", "CREATE FUNCTION fz.tsp_{tn}() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN RETURN NULL; END$$; "
                     "CREATE TRIGGER tsp BEFORE INSERT ON {t} FOR EACH ROW EXECUTE FUNCTION fz.tsp_{tn}()", False),
    ("trigger_skip_half", "CREATE FUNCTION fz.tsh_{tn}() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN "
                          "IF md5(NEW.message_id::text) < '8' THEN RETURN NULL; END IF; RETURN NEW; END$$; "
                          "CREATE TRIGGER tsh BEFORE INSERT ON {t} FOR EACH ROW EXECUTE FUNCTION fz.tsh_{tn}()", False),
    ("trigger_skip_update", "CREATE FUNCTION fz.tsu_{tn}() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN "
                            "RETURN NULL; END$$; CREATE TRIGGER tsu BEFORE UPDATE ON {t} FOR EACH ROW "
                            "EXECUTE FUNCTION fz.tsu_{tn}()", False),
    ("rls_hide_half", "ALTER TABLE {t} ENABLE ROW LEVEL SECURITY; ALTER TABLE {t} FORCE ROW LEVEL SECURITY; "
                      "CREATE POLICY h ON {t} USING (md5({sk}::text) < '8') WITH CHECK (true)", False),
    ("rls_false", "ALTER TABLE {t} ENABLE ROW LEVEL SECURITY; ALTER TABLE {t} FORCE ROW LEVEL SECURITY; "
                  "CREATE POLICY none ON {t} USING (false) WITH CHECK (false)", False),
    ("rls_insert_only", "ALTER TABLE {t} ENABLE ROW LEVEL SECURITY; ALTER TABLE {t} FORCE ROW LEVEL SECURITY; "
                        "CREATE POLICY i ON {t} FOR INSERT WITH CHECK (true)", False),
    ("attach_as_hash_partition", "CREATE TABLE fz.{tn}_parent (LIKE {t}) PARTITION BY HASH ({sk}); "
                                 "ALTER TABLE fz.{tn}_parent ATTACH PARTITION {t} "
                                 "FOR VALUES WITH (MODULUS 1, REMAINDER 0)", False),
    ("attach_as_default_list_partition", "CREATE TABLE fz.{tn}_parent (LIKE {t}) PARTITION BY LIST ({sk}); "
                                         "ALTER TABLE fz.{tn}_parent ATTACH PARTITION {t} DEFAULT", False),
    ("inheritance_child", "CREATE TABLE fz.{tn}_child () INHERITS ({t})", False),
    ("inherits_parent", "CREATE TABLE fz.{tn}_par ({sk} {st}); ALTER TABLE {t} INHERIT fz.{tn}_par", False),
]
# Changes of every inbox that also apply to a sharded one.
SHARDED_ALSO = ["rename_table", "set_unlogged", "revoke_own_rights", "truncate", "message_id_to_text",
                "message_id_collate_nondeterministic", "drop_result", "claimed_at_to_date", "rule_do_instead_nothing",
                "rule_do_also", "add_generated_column", "replica_identity_full", "lease_until_to_text",
                "drop_message_id", "claimed_at_drop_default"]
# Bodies of a trigger on a sharded inbox that calls back into the extension.
SHARDED_REENTRY = [
    ("claim_same_shard_other_id", "IF length(NEW.message_id) < 6 THEN "
                                  "PERFORM inbox.claim_sharded('fz.rs', NEW.acct, NEW.message_id || 'y'); END IF"),
    ("claim_same_shard_same_id", "PERFORM inbox.claim_sharded('fz.rs', NEW.acct, NEW.message_id)"),
    ("claim_other_shard_same_id", "PERFORM inbox.claim_sharded('fz.rs', NEW.acct + 100, NEW.message_id)"),
    ("claim_many", "PERFORM inbox.claim_many_sharded('fz.rs', NEW.acct, ARRAY[NEW.message_id || '-m', NEW.message_id])"),
    ("grant_then_claim", "GRANT SELECT ON fz.rs TO PUBLIC; "
                         "PERFORM inbox.claim_sharded('fz.rs', NEW.acct, NEW.message_id || '-g')"),
    ("claim_apply_nested", "PERFORM inbox.claim_apply_sharded('fz.rs', NEW.acct, NEW.message_id || '-a', 'SELECT 1')"),
    ("drop_marker", "ALTER TABLE fz.rs DROP CONSTRAINT idempotent_inbox"),
    ("drop_inbox", "PERFORM inbox.drop_inbox('fz.rs')"),
    ("set_retention", "PERFORM inbox.set_retention('fz.rs', '1 day')"),
    ("delete_others", "DELETE FROM fz.rs WHERE message_id <> NEW.message_id"),
    ("plain_claim", "PERFORM inbox.claim('fz.rs', NEW.message_id)"),
    ("update_own_shard_key", "UPDATE fz.rs SET acct = acct + 1000 WHERE message_id = NEW.message_id"),
    ("try_claim_nested", "PERFORM inbox.try_claim_sharded('fz.rs', NEW.acct, NEW.message_id || '-t')"),
    ("acquire_same", "PERFORM inbox.acquire_sharded('fz.rs', NEW.acct, NEW.message_id, '1 minute')"),
    ("result_same", "PERFORM inbox.result_sharded('fz.rs', NEW.acct, NEW.message_id)"),
    ("complete_same", "PERFORM inbox.complete_sharded('fz.rs', NEW.acct, NEW.message_id, '{}')"),
    ("record_failure_same", "PERFORM inbox.record_failure_sharded('fz.rs', NEW.acct, NEW.message_id, 'boom', 'k')"),
    ("quarantine_other", "PERFORM inbox.set_max_attempts('fz.rs', 1); "
                         "PERFORM inbox.record_failure_sharded('fz.rs', NEW.acct, NEW.message_id || '-q', 'boom', 'k')"),
    ("claim_in_order", "PERFORM inbox.set_key_ordering('fz.rs', true); "
                       "PERFORM inbox.claim_in_order_sharded('fz.rs', NEW.acct, NEW.message_id || '-o', 'k')"),
    ("retry_same", "PERFORM inbox.retry_sharded('fz.rs', NEW.acct, NEW.message_id)"),
    ("discard_other", "PERFORM inbox.discard_sharded('fz.rs', NEW.acct, NEW.message_id || '-d')"),
    ("forget_same", "PERFORM inbox.forget_sharded('fz.rs', NEW.acct, NEW.message_id)"),
]
SHARDED_REENTRY_CALLS = [
    "SELECT inbox.claim_sharded('fz.rs', 1, 'a'), inbox.claim_sharded('fz.rs', 2, 'a')",
    "SELECT * FROM inbox.claim_many_sharded('fz.rs', 1, ARRAY['a', 'b', 'c'])",
    "SELECT inbox.claim_apply_sharded('fz.rs', 1, 'a', 'SELECT 1'), inbox.claim_apply_sharded('fz.rs', 1, 'b', 'SELECT 1')",
    "SELECT inbox.claim_sharded('fz.rs', 1, 'a'), inbox.claim_sharded('fz.rs', 1, 'a')",
    "SELECT inbox.try_claim_sharded('fz.rs', 1, 'a'), inbox.try_claim_sharded('fz.rs', 1, 'a')",
    "SELECT status FROM inbox.acquire_sharded('fz.rs', 1, 'a', '1 minute')",
    "SELECT inbox.claim_sharded('fz.rs', 1, 'a', '\\x01'::bytea), inbox.claim_sharded('fz.rs', 1, 'a', '\\x01'::bytea)",
    "SELECT inbox.set_key_ordering('fz.rs', true), inbox.claim_in_order_sharded('fz.rs', 1, 'a', 'k'), "
    "inbox.claim_in_order_sharded('fz.rs', 1, 'b', 'k')",
    "SELECT (inbox.record_failure_sharded('fz.rs', 1, 'a', 'boom', 'k')).*, inbox.try_claim_sharded('fz.rs', 1, 'a')",
]

DEDUP_TRIGGERS = [
    ("no_args", ""), ("one_arg", "'fz.events_seen'"), ("three_args", "'fz.events_seen', 'event_id', 'x'"),
    ("missing_inbox", "'nosuch', 'event_id'"), ("non_inbox", "'fz.orders', 'event_id'"),
    ("missing_column", "'fz.events_seen', 'nosuch'"), ("bigint_inbox_text_ids", "'fz.bi', 'event_id'"),
    ("uuid_inbox", "'fz.ui', 'event_id'"), ("catalog", "'pg_catalog.pg_class', 'event_id'"),
    ("registry", "'inbox.registry', 'event_id'"), ("jsonb_column", "'fz.events_seen', 'payload'"),
    ("system_column", "'fz.events_seen', 'ctid'"), ("temp_inbox_name", "'pg_temp.tshape', 'event_id'"),
    ("good", "'fz.events_seen', 'event_id'"), ("empty_names", "'', ''"),
    ("sharded_no_key_column", "'fz.sb', 'event_id'"), ("sharded_key_n", "'fz.sb', 'event_id', 'n'"),
    ("sharded_key_jsonb", "'fz.sb', 'event_id', 'payload'"), ("sharded_key_system", "'fz.sb', 'event_id', 'ctid'"),
    ("sharded_text_key_uuid_ids", "'fz.st', 'event_id', 'event_id'"), ("sharded_int4_key", "'fz.s4', 'event_id', 'n'"),
    ("sharded_key_empty", "'fz.sb', 'event_id', ''"),
]
DEDUP_TIMINGS = ["BEFORE INSERT", "AFTER INSERT", "BEFORE UPDATE", "BEFORE INSERT OR UPDATE"]

FRESH_ANSWERS = {"claim": [True], "try_claim": ["claimed"], "claim_apply": ["applied"]}


def fmt(expr, n):
    return expr.replace("{n}", str(n))


class ServerGone(Exception):
    pass


class Failure:
    def __init__(self, cls, func, outcome, kind, detail, repro):
        self.cls, self.func, self.outcome, self.kind = cls, func, outcome, kind
        self.detail, self.repro = detail, repro
        self.count = 1
        self.standalone = None


class Fuzzer:
    def __init__(self, args):
        self.args = args
        self.rng = random.Random(args.seed)
        self.n = 0
        self.failures = {}
        self.stats = {"cases": 0, "statements": 0, "errors": 0, "crashes": 0, "internal": 0,
                      "hangs": 0, "wrong": 0, "leaks": 0, "sqlsmith_generated": 0,
                      "sqlsmith_run": 0, "setup_skipped": 0}
        self.conn = None
        self.cur_shard = "1"
        self.notices = []
        self.log_pos = 0
        self.sqlsmith_status = "not run"
        self.in_sqlsmith = False
        self.restarts = 0
        self.error_kinds = {}

    # ---- connections -------------------------------------------------
    def dsn(self, db=DB, user="postgres"):
        return dict(host=self.args.host, port=self.args.port, dbname=db, user=user,
                    application_name="inbox_fuzz")

    def connect(self, db=DB, user="postgres"):
        conn = psycopg.connect(**self.dsn(db, user), autocommit=True, connect_timeout=10)
        conn.add_notice_handler(lambda d: self.notices.append(
            (d.severity_nonlocalized or d.severity, d.message_primary or "")))
        conn.execute("SET statement_timeout = %s" % int(self.args.timeout * 1000))
        conn.execute("SET lock_timeout = %s" % int(self.args.timeout * 1000))
        return conn

    def wait_for_server(self):
        """After a crash: wait for recovery; restart our own cluster if the postmaster
        gave up (it does when recovery fails); ServerGone if nothing helps."""
        for attempt in range(2):
            deadline = time.time() + 60
            while time.time() < deadline:
                try:
                    c = psycopg.connect(**self.dsn(), autocommit=True, connect_timeout=5)
                    c.close()
                    return True
                except psycopg.Error:
                    time.sleep(0.3)
                    if self.args.data and not os.path.exists(os.path.join(self.args.data, "postmaster.pid")):
                        break
            if not self.args.data or attempt:
                break
            print("# the server did not come back after a crash: restarting it", file=sys.stderr)
            self.restarts += 1
            fatal = ""
            with open(self.args.log, "rb") as fh:
                for ln in fh.read().decode("utf-8", "replace").splitlines()[-200:]:
                    if "FATAL" in ln and "57P03" not in ln:
                        fatal = ln.split("FATAL:  ", 1)[-1]
            self.record("recovery", "crash", "crash recovery", "the startup process failed: " + fatal,
                        ["-- crash recovery after a backend crash; see the server log"], standalone_check=False)
            subprocess.run(["pg_ctl", "-D", self.args.data, "-l", self.args.log, "-w", "-t", "60", "-s",
                            "start"], capture_output=True)
        raise ServerGone("the server did not come back after a crash")

    def main_conn(self):
        if self.conn is None or self.conn.closed or self.conn.broken:
            if not self.wait_for_server():
                raise RuntimeError("the server did not come back")
            self.conn = self.connect()
        return self.conn

    # ---- server log ----------------------------------------------------
    def new_log_crashes(self):
        """Lines since the last look that say a backend died."""
        if not self.args.log or not os.path.exists(self.args.log):
            return []
        with open(self.args.log, "rb") as f:
            f.seek(self.log_pos)
            data = f.read()
            self.log_pos = f.tell()
        text = data.decode("utf-8", "replace").splitlines()
        found = []
        for i, ln in enumerate(text):
            if "terminated by signal" in ln or "terminated by exception" in ln or \
                    ("exited with exit code" in ln and ("server process" in ln or "background worker" in ln)
                     and "exit code 1" not in ln):
                msg = ln.split(" LOG:  ", 1)[-1]
                nxt = text[i + 1] if i + 1 < len(text) else ""
                query = nxt.split("Failed process was running: ", 1)[1] if "Failed process was running" in nxt else ""
                found.append((msg, query))
            if "could not create file" in ln and "FATAL" in ln:
                found.append(("recovery failed: " + ln.split("FATAL:  ", 1)[-1], ""))
        return found

    # ---- running SQL ---------------------------------------------------
    def run_statements(self, stmts, conn=None, in_txn=True):
        """Run stmts in one transaction that is rolled back (in_txn) or autocommit.
        Returns (index of failing statement or None, outcome, detail, rows of the last)."""
        conn = conn or self.main_conn()
        rows = None
        watchdog_fired = []

        def cancel_then_kill():
            watchdog_fired.append(1)
            try:
                conn.cancel()
            except Exception:  # noqa: BLE001
                pass
        if in_txn:
            stmts = ["BEGIN"] + list(stmts)
        i = 0
        try:
            for i, s in enumerate(stmts):
                self.stats["statements"] += 1
                timer = threading.Timer(self.args.timeout * 3, cancel_then_kill)
                timer.start()
                try:
                    cur = conn.execute(s)
                    try:
                        rows = cur.fetchall() if cur.description else None
                    except (UnicodeDecodeError, ValueError) as e:
                        # The server sent text that is not valid in the database encoding.
                        return (i - 1 if in_txn else i), "wrong answer: result is not valid UTF-8", str(e), None
                finally:
                    timer.cancel()
            return None, "ok", "", rows
        except psycopg.Error as e:
            idx = i - 1 if in_txn else i
            state = getattr(e, "sqlstate", None)
            if state == "57P02":
                # Killed because another process crashed: not this statement's doing.
                self.conn = None if conn is self.conn else self.conn
                return idx, "crash-victim", e.diag.message_primary or str(e), None
            if conn.closed or conn.broken or state is None:
                self.conn = None if conn is self.conn else self.conn
                return idx, "crash", str(e).strip().splitlines()[0] if str(e) else "connection lost", None
            if state == "57014" and watchdog_fired:
                outcome = "hang"
                detail = "ignored statement_timeout; cancelled by the fuzzer's watchdog"
            elif state in ("57014", "55P03"):
                outcome = "hang"
                detail = e.diag.message_primary or str(e)
            elif state.startswith("XX") and self.in_sqlsmith and not self.ours(e.diag.source_file):
                # sqlsmith calls any catalog function (unknownin, typmod functions...)
                # with any argument; an internal error raised in core code there is
                # core's, not ours.  Ours (raised in a file of src/) still counts.
                outcome = "error:" + state
                detail = e.diag.message_primary or str(e)
            elif state.startswith("XX"):
                outcome = state
                detail = e.diag.message_primary or str(e)
            else:
                outcome = "error:" + state
                detail = e.diag.message_primary or str(e)
            return idx, outcome, detail, None
        finally:
            if in_txn and self.conn is conn and not (conn.closed or conn.broken):
                try:
                    conn.execute("ROLLBACK")
                except psycopg.Error:
                    self.conn = None

    # ---- failures --------------------------------------------------------
    @staticmethod
    def norm(msg):
        msg = re.sub(r'"[^"]*"', '"…"', msg)
        return re.sub(r"\d+", "N", msg)[:160]

    @staticmethod
    def func_of(stmt):
        m = re.search(r"inbox\.(\w+)\s*\(", stmt)
        return m.group(1) if m else "statement"

    def record(self, func, outcome, kind, detail, repro, standalone_check=True):
        if outcome == "crash":
            self.stats["crashes"] += 1
            cls = (func, "crash", kind)
        elif outcome.startswith("XX"):
            self.stats["internal"] += 1
            cls = (func, outcome + " " + self.norm(detail), kind)
        elif outcome == "hang":
            self.stats["hangs"] += 1
            cls = (func, "hang", kind)
        elif outcome == "leak":
            self.stats["leaks"] += 1
            cls = (func, "leak " + self.norm(detail), "any")
        else:
            self.stats["wrong"] += 1
            cls = (func, outcome, kind)
        f = self.failures.get(cls)
        if f:
            f.count += 1
            if len(repro) < len(f.repro):
                f.repro = repro
            return
        f = Failure(cls, func, outcome, kind, detail, repro)
        self.failures[cls] = f
        print(f"# new defect class: {func} / {cls[1]} / {kind}", file=sys.stderr)
        if standalone_check and (outcome == "crash" or outcome.startswith("XX")):
            f.standalone = self.reproduces(repro, outcome)
            if f.standalone and self.args.minimize:
                f.repro = self.minimize(repro, outcome)

    def minimize(self, repro, outcome):
        """Drop the statements a reproduction does not need, one at a time (each try on a
        fresh connection); the failing call, the role and create_inbox stay."""
        if not repro or repro[0] != "BEGIN":
            return repro
        body = repro[1:-1]
        i = len(body) - 2
        while i >= 0:
            s = body[i]
            if not (s.startswith("SET LOCAL ROLE") or "create_inbox" in s or s.startswith("CREATE FUNCTION")):
                candidate = body[:i] + body[i + 1:]
                if self.reproduces(["BEGIN"] + candidate + ["ROLLBACK"], outcome):
                    body = candidate
            i -= 1
        return ["BEGIN"] + body + ["ROLLBACK"]

    def reproduces(self, repro, outcome):
        """Run a reproduction on a fresh connection: does it give the same outcome?"""
        try:
            if not self.wait_for_server():
                return None
            conn = self.connect()
        except psycopg.Error:
            return None
        try:
            _, got, _, _ = self.run_statements(repro[1:-1], conn=conn, in_txn=True) \
                if repro and repro[0] == "BEGIN" else self.run_statements(repro, conn=conn, in_txn=False)
            if got in ("crash", "crash-victim"):
                time.sleep(0.5)
                self.wait_for_server()
                self.new_log_crashes()
            return got == outcome
        finally:
            try:
                conn.execute("ROLLBACK")
                conn.close()
            except psycopg.Error:
                pass

    def check_notices(self, func, repro):
        for sev, msg in self.notices:
            if sev == "WARNING" and re.search(r"leak|not closed|still referenced|was not released", msg):
                self.record(func, "leak", "any", msg, repro, standalone_check=False)
        self.notices.clear()

    def run_case(self, setup, calls, kind, check=None, conn=None, lock_probe=False, partial_check=False):
        """One case: setup and calls in one rolled-back transaction.  check(rows_by_call)
        returns a list of (func, wrong-answer description) for wrong answers; with
        partial_check, also when a call failed (given the rows of the calls before it)."""
        self.stats["cases"] += 1
        stmts = list(setup) + list(calls)
        conn = conn or self.main_conn()
        rows_by_call = []
        # Run statement by statement so that each call's answer can be checked.
        self.notices.clear()
        idx, outcome, detail, _ = None, "ok", "", None
        conn.execute("BEGIN")
        try:
            for i, s in enumerate(stmts):
                j, outcome, detail, rows = self.run_statements([s], conn=conn, in_txn=False)
                if outcome != "ok":
                    idx = i
                    break
                if i >= len(setup):
                    rows_by_call.append(rows)
        finally:
            rollback_lost = False
            if self.conn is conn and not (conn.closed or conn.broken):
                try:
                    conn.execute("ROLLBACK")
                except psycopg.Error:
                    # Everything returned, then the backend died while aborting.
                    self.conn = None
                    rollback_lost = True
        repro = ["BEGIN"] + stmts[: (idx + 1 if idx is not None else len(stmts))] + ["ROLLBACK"]
        if outcome in ("crash", "crash-victim") or rollback_lost:
            # The postmaster logs the crash a moment after our connection is gone (and
            # may still accept a connection before it notices): wait for the log line.
            crash_lines = []
            deadline = time.time() + 5
            while self.args.log and not crash_lines and time.time() < deadline:
                time.sleep(0.1)
                crash_lines = self.new_log_crashes()
            self.wait_for_server()
            crash_lines += self.new_log_crashes()
        else:
            crash_lines = self.new_log_crashes()
        if outcome == "crash-victim":
            outcome = "victim"
        if outcome in ("crash", "victim") or crash_lines:
            self.wait_for_server()
            self.conn = None
            ran = stmts[idx] if idx is not None else None
            def same(query, stmt):
                # The log shows at most track_activity_query_size bytes of the query.
                q = query.strip()
                return bool(q) and stmt is not None and stmt.strip()[:len(q)] == q and len(q) > 0

            ours = [c for c in crash_lines if same(c[1], ran)]
            if outcome == "crash" and (ours or not crash_lines):
                self.record(self.func_of(ran), "crash", kind,
                            (ours[0][0] if ours else detail), repro)
            for msg, query in crash_lines:
                if same(query, ran):
                    continue
                if any(same(query, x) for x in stmts):
                    # A statement of this case that had returned: the crash came later,
                    # at ROLLBACK (abort callbacks, cleanup of the extension's state).
                    self.record(self.func_of(query), "crash", kind + " (after it returned its result)", msg,
                                repro, standalone_check=True)
                    continue
                # Another process died: the purge worker, say, or recovery itself.
                if "background worker" in msg:
                    self.record("purge worker", "crash", "background worker", msg,
                                ["-- the worker was running: " + (query or "?")], standalone_check=False)
                elif msg.startswith("recovery failed"):
                    self.record("recovery", "crash", "crash recovery", msg,
                                ["-- after the crash of: " + (ran or "?")], standalone_check=False)
                else:
                    self.record(self.func_of(query or ""), "crash", "another session", msg,
                                [query or "?"], standalone_check=False)
            self.new_log_crashes()
            return idx, "crash", detail
        if idx is not None:
            func = self.func_of(stmts[idx])
            if lock_probe and outcome == "hang":
                outcome = "wrong answer: waits for a lock on a table it has no rights to"
            if outcome.startswith("XX") or outcome == "hang" or outcome.startswith("wrong answer"):
                self.record(func, outcome, kind, detail, repro)
            else:
                self.stats["errors"] += 1
                key = ("setup " if idx < len(setup) else func + " ") + outcome + " " + self.norm(detail)[:80]
                self.error_kinds[key] = self.error_kinds.get(key, 0) + 1
                if idx < len(setup):
                    self.stats["setup_skipped"] += 1
        if check is not None and (idx is None or (partial_check and idx >= len(setup))):
            for func, what in check(rows_by_call):
                self.record(func, what, kind, what, repro)
        self.check_notices(self.func_of(stmts[-1]) if stmts else "statement", repro)
        return idx, outcome, detail

    # ---- the database ----------------------------------------------------
    def prepare(self):
        c = psycopg.connect(**self.dsn("postgres"), autocommit=True)
        c.execute(f"DROP DATABASE IF EXISTS {DB} WITH (FORCE)")
        c.execute(f"CREATE DATABASE {DB}")
        for role in (OWNER, NOBODY):
            if not c.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,)).fetchone():
                c.execute(f"CREATE ROLE {role} LOGIN")
        c.close()
        c = psycopg.connect(**self.dsn(), autocommit=True)
        ddl = f"""
CREATE EXTENSION {EXT};
CREATE SCHEMA fz AUTHORIZATION {OWNER};
GRANT USAGE ON SCHEMA fz TO {NOBODY};
GRANT EXECUTE ON FUNCTION inbox.drop_inbox(regclass), inbox.set_retention(regclass, interval),
      inbox.purge(regclass, int4), inbox.drop_outbox(regclass),
      inbox.set_outbox_retention(regclass, interval), inbox.purge_outbox(regclass, int4)
      TO {OWNER}, {NOBODY};
CREATE EXTENSION file_fdw;
CREATE SERVER fuzz_srv FOREIGN DATA WRAPPER file_fdw;
CREATE FOREIGN TABLE fz.ft (message_id text, claimed_at timestamptz) SERVER fuzz_srv
    OPTIONS (filename '/dev/null');
ALTER FOREIGN TABLE fz.ft OWNER TO {OWNER};
DO $$BEGIN
  CREATE COLLATION fz.ci (provider = icu, locale = 'und-u-ks-level2', deterministic = false);
EXCEPTION WHEN OTHERS THEN
  CREATE COLLATION fz.ci FROM "C";
END$$;
ALTER COLLATION fz.ci OWNER TO {OWNER};
SET ROLE {OWNER};
SELECT inbox.create_inbox('fz.ti', 'text', '1 day');
SELECT inbox.create_outbox('fz.ob');
SELECT inbox.emit('fz.ob', 'topic', 'k', '{{}}'), inbox.emit('fz.ob', 'topic', NULL, '{{}}');
SELECT inbox.create_inbox('fz.ui', 'uuid');
SELECT inbox.create_inbox('fz.bi', 'bigint', '1 hour');
SELECT inbox.create_inbox('fz.rt', 'text', '1 second');
SELECT inbox.claim('fz.ti', 'a'), inbox.claim('fz.ti', 'b'), inbox.claim('fz.rt', 'old');
SELECT inbox.complete('fz.ti', 'a', '{{"secret": "s3cr3t"}}');
SELECT inbox.claim('fz.ui', '00000000-0000-0000-0000-000000000001'::uuid);
SELECT inbox.complete('fz.ui', '00000000-0000-0000-0000-000000000001'::uuid, '{{"secret": "s3cr3t"}}');
SELECT inbox.claim('fz.bi', 1::bigint), inbox.claim('fz.bi', 2::bigint);
SELECT inbox.complete('fz.bi', 1::bigint, '{{"secret": "s3cr3t"}}');
SELECT inbox.acquire('fz.ti', 'lease1', '1 hour'), inbox.acquire('fz.ti', 'done1', '1 hour');
SELECT inbox.finish('fz.ti', 'done1', (SELECT token FROM fz.ti WHERE message_id = 'done1'), '{{"secret": "s3cr3t"}}');
SELECT inbox.acquire('fz.ui', '00000000-0000-0000-0000-0000000000a1'::uuid, '1 hour'),
       inbox.acquire('fz.ui', '00000000-0000-0000-0000-0000000000d1'::uuid, '1 hour');
SELECT inbox.finish('fz.ui', '00000000-0000-0000-0000-0000000000d1'::uuid,
       (SELECT token FROM fz.ui WHERE message_id = '00000000-0000-0000-0000-0000000000d1'), '{{"secret": "s3cr3t"}}');
SELECT inbox.acquire('fz.bi', 11::bigint, '1 hour'), inbox.acquire('fz.bi', 12::bigint, '1 hour');
SELECT inbox.finish('fz.bi', 12::bigint, (SELECT token FROM fz.bi WHERE message_id = 12), '{{"secret": "s3cr3t"}}');
SELECT inbox.advance('fz.ti', 'orders', 0, 10), inbox.advance('fz.bi', 'orders', 1, 5);
CREATE TABLE fz.orders (id bigint PRIMARY KEY, status text NOT NULL DEFAULT 'PENDING', amount numeric, version int);
INSERT INTO fz.orders SELECT g, 'PENDING', g, 1 FROM generate_series(1, 20) g;
SELECT inbox.guard_transitions('fz.orders', 'status', '{{"PENDING": ["PAID", "CANCELLED"], "PAID": ["SHIPPED"]}}');
SELECT inbox.create_inbox('fz.events_seen', 'text');
CREATE TABLE fz.events (event_id text, payload jsonb);
CREATE TRIGGER dedup BEFORE INSERT ON fz.events FOR EACH ROW
    EXECUTE FUNCTION inbox.dedup_trigger('fz.events_seen', 'event_id');
INSERT INTO fz.events VALUES ('e1', '{{}}'), ('e1', '{{}}'), ('e2', NULL);
CREATE VIEW fz.v AS SELECT * FROM fz.ti;
CREATE MATERIALIZED VIEW fz.mv AS SELECT * FROM fz.orders;
CREATE TABLE fz.part (id bigint PRIMARY KEY, status text, message_id text) PARTITION BY RANGE (id);
CREATE TABLE fz.part_1 PARTITION OF fz.part FOR VALUES FROM (0) TO (1000);
INSERT INTO fz.part VALUES (1, 'PENDING', 'x');
CREATE UNLOGGED TABLE fz.unl (LIKE fz.ti INCLUDING ALL);
CREATE TABLE fz.shape (LIKE fz.ti INCLUDING ALL);
CREATE TABLE fz.nopk (id int, status text);
CREATE TABLE fz.gen (id int PRIMARY KEY, status text, g int GENERATED ALWAYS AS (id * 2) STORED);
CREATE TABLE fz.inh (id bigint PRIMARY KEY, status text);
CREATE TABLE fz.inh_child () INHERITS (fz.inh);
CREATE SEQUENCE fz.seq;
CREATE TYPE fz.ct AS (a int, b text);
CREATE DOMAIN fz.dtext AS text CHECK (length(VALUE) < 5);
CREATE TABLE fz.dropped (x int);
CREATE DOMAIN fz.dpos AS bigint CHECK (VALUE > 0);
SELECT inbox.create_sharded_inbox('fz.sb', 'acct', 'bigint', 'text', '1 day');
SELECT inbox.create_sharded_inbox('fz.s4', 'Acct Id', 'int4');
SELECT inbox.create_sharded_inbox('fz.st', 'tenant', 'text', 'uuid');
SELECT inbox.create_sharded_inbox('fz.sd', 'acct', 'fz.dpos', 'uuid');
SELECT inbox.create_sharded_inbox('fz.su', 'region', 'uuid', 'bigint', '1 hour');
SELECT inbox.create_sharded_inbox('fz.sx', 'Message_Id', 'text', 'bigint');
SELECT inbox.claim_sharded('fz.sb', 1, 'a'), inbox.claim_sharded('fz.sb', 2, 'a'), inbox.claim_sharded('fz.s4', 1, 'a');
SELECT inbox.claim_sharded('fz.st', '1', '00000000-0000-0000-0000-000000000001'::uuid),
       inbox.claim_sharded('fz.sd', 1, '00000000-0000-0000-0000-000000000001'::uuid),
       inbox.claim_sharded('fz.su', '00000000-0000-0000-0000-000000000001'::uuid, 1::bigint),
       inbox.claim_sharded('fz.sx', '1', 1::bigint);
SELECT count(*) FROM inbox.claim_many_sharded('fz.sb', 1, ARRAY['b', 'c']);
CREATE TABLE fz.sshape (LIKE fz.sb INCLUDING ALL);
ANALYZE fz.orders;
RESET ROLE;
CREATE TYPE fz.shell;
"""
        for stmt in split_sql(ddl):
            c.execute(stmt)
        self.dropped_oid = c.execute("SELECT 'fz.dropped'::regclass::oid").fetchone()[0]
        c.execute("DROP TABLE fz.dropped")
        c.close()
        self.functions = self.enumerate_functions()

    def enumerate_functions(self):
        c = self.main_conn()
        rows = c.execute("""
            SELECT p.oid, p.proname, p.proargtypes::regtype[]::text[], coalesce(p.proargnames, '{}'),
                   p.provariadic <> 0, p.pronargdefaults, p.proretset
              FROM pg_proc p
              JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid
                              AND d.refclassid = 'pg_extension'::regclass AND d.deptype = 'e'
              JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = %s
             WHERE p.prorettype NOT IN ('trigger'::regtype, 'event_trigger'::regtype)
             ORDER BY p.proname, p.oid""", (EXT,)).fetchall()
        return [dict(oid=r[0], name=r[1], types=r[2], names=r[3], variadic=r[4], ndefaults=r[5],
                     retset=r[6]) for r in rows]

    # ---- building calls ----------------------------------------------------
    def key_type_of(self, fn):
        # The message id follows the shard key in the _sharded functions.
        for name, t in zip(fn["names"][1:3], fn["types"][1:3]):
            if name in ("message_id", "message_ids", "key") and t.rstrip("[]") in ("text", "uuid", "bigint"):
                return t.rstrip("[]")
        return "text"

    def pool_for(self, fn, i):
        t = fn["types"][i]
        name = fn["names"][i] if i < len(fn["names"]) else ""
        if t == "regclass":
            return [(k, e.replace("{dropped_oid}", str(self.dropped_oid))) for k, e in RELATIONS]
        if name == "shard_key" and t == '"any"':
            return SHARD_VALUES
        if name == "shard_key":
            return SHARD_NAMES
        if name == "shard_key_type":
            return [(k, e) for k, e, _ in SHARD_TYPES]
        if name in ("message_id", "key") and t in ("text", "uuid", "bigint") and fn["name"] not in (
                "upsert", "transition"):
            return {"text": TEXT_IDS, "uuid": UUID_IDS, "bigint": BIGINT_IDS}[t]
        if name == "message_ids":
            return ARRAYS.get(t, ARRAYS["text[]"])
        if name == "statement":
            return [(k, "'" + s.replace("'", "''") + "'") for k, s in STATEMENTS]
        if name == "name":
            return NAMES
        if name in ("state_column", "version_column"):
            return COLUMNS
        if name in ("to_state",):
            return STATES
        if name == "from_states":
            return STATE_ARRAYS
        if name == "key" and t == "text[]":
            return KEY_ARRAYS
        if name == "topic":
            return TOPICS
        if name == "token":
            return TOKENS
        if name == "tgargs":
            return TGARGS
        if name == "new_row" and t == "anyelement":
            return ROWS
        if t == "jsonb":
            return JSONB
        if t == "interval":
            return INTERVALS
        if t == "bytea":
            return BYTEA
        if t == "boolean":
            return BOOLS
        if t == "integer":
            return INT4
        if t == "smallint":
            return INT2
        if t == "regtype":
            return REGTYPES
        if t == "bigint":
            return BIGINT_IDS
        if t in ARRAYS:
            return ARRAYS[t]
        if t == "uuid":
            return UUID_IDS
        if t == '"any"':
            return ANY_VALUES
        return TEXT_IDS

    def good_value(self, fn, i, inbox_expr):
        """A value that makes the call work, so that one hostile argument is what fails."""
        t = fn["types"][i]
        name = fn["names"][i] if i < len(fn["names"]) else ""
        n = self.n
        f = fn["name"]
        if t == "regclass":
            if f in ("upsert", "transition", "transition_key", "guard_transitions", "unguard_transitions"):
                return "'fz.orders'"
            if f in ("emit", "emit_bytes", "relay_take", "relay_ack", "relay_release", "purge_outbox",
                     "drop_outbox", "set_outbox_retention"):
                return "'fz.ob'"
            return inbox_expr
        if name == "shard_key" and t == '"any"':
            return fmt(self.cur_shard, n)
        if name == "shard_key":
            return fmt("'acct_{n}'", n)
        if name == "shard_key_type":
            return "'bigint'"
        if name in ("message_id", "key") and t in ("text", "uuid", "bigint") and f not in ("upsert", "transition"):
            return fmt({"text": "'f-{n}'", "uuid": "md5('{n}')::uuid", "bigint": "{n}"}[t], n)
        if name == "message_ids":
            return fmt({"text[]": "ARRAY['f-{n}', 'g-{n}']", "uuid[]": "ARRAY[md5('{n}')::uuid]",
                        "bigint[]": "ARRAY[{n}]", "text": "'{f-{n},g-{n}}'"}[t], n)
        if name == "statement":
            return "'" + GOOD_STATEMENT + "'"
        if name == "name":
            return fmt("'fz.new_{n}'", n)
        if name == "state_column":
            return "'status'"
        if name == "version_column":
            return "'version'" if f == "upsert" else "NULL"
        if name == "to_state":
            return "'PAID'"
        if name == "from_states":
            return "'{PENDING}'"
        if name == "key" and t == "text[]":
            return "NULL"
        if name == "key" and t == "jsonb":
            return "'{\"id\": 1}'"
        if name == "key" and t == '"any"':
            return "1"
        if name == "new_row" and t == "jsonb":
            return fmt("'{\"id\": {n}, \"status\": \"PENDING\", \"version\": 1}'", n)
        if name == "new_row":
            return fmt("ROW({n}, 'PENDING', 5, 1)::fz.orders", n)
        if name == "edges":
            return "'{\"PENDING\": [\"PAID\"], \"PAID\": [\"SHIPPED\"]}'"
        if name == "topic":
            return "'orders'"
        if name == "partition":
            return "0"
        if name == "offset":
            return fmt("{n}", n)
        if name in ("lease",):
            return "'1 minute'"
        if name == "retention":
            return "'1 day'"
        if name == "key_type":
            return "'text'"
        if name == "batch":
            return "100"
        if name == "token":
            rel = inbox_expr.strip("'") if inbox_expr.startswith("'") else "fz.ti"
            return f"(SELECT max(token) FROM {rel})"
        if name == "tgargs":
            return "'\\x6100'"
        if name == "tgnargs":
            return "1"
        if name in ("result", "payload"):
            return "'{\"ok\": true}'"
        if name == "args":
            return "'{}'" if t == "text[]" else "VARIADIC ARRAY[]::int[]"
        if t == "bytea":
            return "NULL"
        if t == "boolean":
            return "false"
        if t == '"any"':
            return "1"
        return "NULL"

    def build_call(self, fn, args):
        """args: list of SQL expressions, one per declared argument (variadic last)."""
        parts = []
        for i, (t, a) in enumerate(zip(fn["types"], args)):
            if fn["variadic"] and i == len(fn["types"]) - 1:
                if isinstance(a, list):
                    parts.extend(a)  # spread "any" values
                    continue
                parts.append(f"VARIADIC CAST({a} AS {t})" if t != '"any"' else a)
                continue
            if t == "anyelement" or t == '"any"':
                parts.append(a)
            else:
                parts.append(f"CAST({a} AS {t})")
        call = f"inbox.{fn['name']}({', '.join(parts)})"
        if fn["retset"] or fn["name"] in ("acquire", "live_counters"):
            return f"SELECT * FROM {call}"
        return f"SELECT {call}"

    def inbox_for(self, fn):
        """The inbox a call of fn works on; for a _sharded function, one of the
        sharded inboxes of its key type, whose good shard key value good_value uses."""
        kt = self.key_type_of(fn)
        self.cur_shard = "1"
        if fn["name"].endswith("_sharded"):
            rel = self.rng.choice([r for r, v in SHARDED.items() if v[0] == kt])
            self.cur_shard = SHARDED[rel][3]
            return f"'{rel}'"
        return INBOX_OF_KEY[kt][1]

    # ---- strategies ---------------------------------------------------------
    def case_hostile_arg(self):
        fn = self.rng.choice(self.functions)
        self.n += 1
        inbox = self.inbox_for(fn)
        args = [self.good_value(fn, i, inbox) for i in range(len(fn["types"]))]
        setup = []
        kinds = []
        nhostile = 1 if self.rng.random() < 0.8 else 2
        for _ in range(nhostile):
            i = self.rng.randrange(len(fn["types"]))
            pool = self.pool_for(fn, i)
            if fn["variadic"] and i == len(fn["types"]) - 1 and fn["types"][i] == '"any"':
                picks = [self.rng.choice(ANY_VALUES) for _ in range(self.rng.randrange(0, 4))]
                args[i] = [fmt(e, self.n) for _, e in picks]
                kinds.append("args=" + ",".join(k for k, _ in picks))
                continue
            kind, expr = self.rng.choice(pool)
            args[i] = fmt(expr, self.n)
            argname = fn["names"][i] if i < len(fn["names"]) and fn["names"][i] else f"arg{i + 1}"
            kinds.append(f"{argname}={kind}")
            for need in (TEMP_SETUP.get(kind), TEMP_SETUP["temp_partitioned"]
                         if kind == "temp_partitioned_row" else None):
                if need and need not in setup:
                    setup.append(need)
        role = self.rng.random()
        if role < 0.5:
            setup.append(f"SET LOCAL ROLE {OWNER}")
        key = self.key_type_of(fn) if fn["names"][1:2] and fn["names"][1] in (
            "message_id", "key", "message_ids") and fn["types"][1] != "jsonb" else ""
        self.run_case(setup, [self.build_call(fn, args)],
                      (f"{key} key, " if key else "") + " ".join(sorted(set(kinds))))

    def case_claim_apply(self):
        fns = [f for f in self.functions if f["name"] in ("claim_apply", "claim_apply_sharded")]
        fn = self.rng.choice(fns)
        self.n += 1
        kind, stmt = self.rng.choice(STATEMENTS)
        stmt = fmt(stmt, self.n)
        args = [self.inbox_for(fn)] + [self.good_value(fn, i, "") for i in range(1, fn["names"].index("statement"))]
        args.append("'" + stmt.replace("'", "''") + "'")
        if len(fn["types"]) == len(args) + 1:
            if fn["types"][-1] == '"any"':
                args.append([fmt(e, self.n) for _, e in
                             (self.rng.choice(ANY_VALUES) for _ in range(self.rng.randrange(0, 3)))])
            else:
                args.append(self.rng.choice(["'{}'", "'{1,2}'", "NULL", "'{NULL}'"]))
        setup = [f"SET LOCAL ROLE {OWNER}"] if self.rng.random() < 0.7 else []

        def check(rows_by_call):
            # A statement that runs nothing must not be reported as an applied effect.
            if kind in ("empty", "blank", "semicolon", "comment_only", "line_comment") and \
                    rows_by_call[-1] == [("applied",)]:
                return [(fn["name"], "wrong answer: applied, but the statement runs nothing")]
            return []
        self.run_case(setup, [self.build_call(fn, args)], "statement=" + kind, check=check)

    def case_retention(self):
        """A retention that is accepted must not make every later claim fail."""
        self.n += 1
        kind, iv = self.rng.choice(INTERVALS)
        how = self.rng.choice(["create_inbox", "set_retention"])
        setup = [f"SET LOCAL ROLE {OWNER}"]
        if how == "create_inbox":
            setup.append(f"SELECT inbox.create_inbox('fz.m', 'text', {iv})")
        else:
            setup += ["SELECT inbox.create_inbox('fz.m', 'text')", f"SELECT inbox.set_retention('fz.m', {iv})"]
        call = self.rng.choice(["SELECT inbox.claim('fz.m', 'x')", "SELECT inbox.purge('fz.m')",
                                "SELECT inbox.oldest_claim('fz.m')", "SELECT status FROM inbox.acquire('fz.m', 'x', '1 minute')"])
        res = self.run_case(setup, [call], f"{how} retention={kind}")
        if res and res[0] == len(setup) and res[1] in ("error:22008", "error:22015"):
            self.record(self.func_of(call), "wrong answer: retention accepted, then calls fail (" + res[1][6:] + ")",
                        f"{how} retention={kind}", res[2], ["BEGIN"] + setup + [call, "ROLLBACK"],
                        standalone_check=False)

    def key_literal(self, kt, s):
        return {"text": f"'{s}'", "uuid": f"md5('{s}')::uuid", "bigint": f"(hashtext('{s}')::bigint)"}[kt]

    def case_mutation(self):
        self.n += 1
        kt = self.rng.choice(["text", "uuid", "bigint"])
        t, tn = "fz.m", "m"
        setup = [f"SET LOCAL ROLE {OWNER}",
                 f"SELECT inbox.create_inbox('{t}', '{kt}', {self.rng.choice(['NULL', quote('1 day')])})",
                 f"SELECT inbox.claim('{t}', {self.key_literal(kt, 'c1')})",
                 f"SELECT inbox.complete('{t}', {self.key_literal(kt, 'c1')}, '{{\"secret\": 1}}')",
                 f"SELECT * FROM inbox.acquire('{t}', {self.key_literal(kt, 'l1')}, '1 hour')"]
        funcs = [f for f in self.functions if f["types"][:1] == ["regclass"]]
        # Prime the extension's caches with a call before the change, sometimes.
        if self.rng.random() < 0.5:
            setup.append(self.mutation_call(self.rng.choice(funcs), t, kt, "p"))
        picks = self.rng.sample(MUTATIONS, self.rng.choice([1, 1, 1, 2, 3]))
        for kind, sql in picks:
            setup.extend(s.strip() for s in split_steps(sql.format(t=t, tn=tn)))
            if kind == "rename_table":
                t, tn = "fz.m_renamed", "m_renamed"
        calls = []
        fn = self.rng.choice(funcs)
        calls.append(self.mutation_call(fn, t, kt, "x"))
        # The same-transaction oracle: claim one fresh id twice, acquire one key twice.
        oracle = self.rng.choice(["claim", "try_claim", "claim_many", "acquire", "claim_apply", None])
        if oracle:
            k = self.key_literal(kt, f"o{self.n}")
            if oracle == "claim":
                calls += [f"SELECT inbox.claim('{t}', {k})"] * 2
            elif oracle == "try_claim":
                calls += [f"SELECT inbox.try_claim('{t}', {k})"] * 2
            elif oracle == "claim_apply":
                calls += [f"SELECT inbox.claim_apply('{t}', {k}, 'SELECT 1')"] * 2
            elif oracle == "claim_many":
                calls += [f"SELECT * FROM inbox.claim_many('{t}', ARRAY[{k}])"] * 2
            else:
                calls += [f"SELECT status FROM inbox.acquire('{t}', {k}, '1 hour')"] * 2

        def check(rows_by_call):
            if not oracle or len(rows_by_call) < 3:
                return []
            a, b = rows_by_call[-2], rows_by_call[-1]
            fresh = {"claim": lambda r: r == [(True,)], "try_claim": lambda r: r == [("claimed",)],
                     "claim_apply": lambda r: r == [("applied",)], "claim_many": lambda r: bool(r),
                     "acquire": lambda r: r == [("acquired",)]}[oracle]
            if fresh(a) and fresh(b):
                what = "two live leases for one key" if oracle == "acquire" else "id claimed twice"
                return [(oracle, "wrong answer: " + what + " (same transaction)")]
            return []
        kinds = "+".join(sorted(k for k, _ in picks))
        self.run_case(setup, calls, f"{kt} inbox after {kinds}", check=check)

    def mutation_call(self, fn, t, kt, tag):
        """A call of fn on inbox t with otherwise good arguments."""
        if self.key_type_of(fn) != kt and self.rng.random() < 0.8:
            same = [f for f in self.functions if f["name"] == fn["name"] and self.key_type_of(f) == kt
                    and len(f["types"]) == len(fn["types"])]
            if same:
                fn = same[0]
        args = [self.good_value(fn, i, f"'{t}'") for i in range(len(fn["types"]))]
        for i, (name, typ) in enumerate(zip(fn["names"], fn["types"])):
            if name in ("message_id", "key") and typ in ("text", "uuid", "bigint"):
                args[i] = self.rng.choice([self.key_literal(kt, "c1"), self.key_literal(kt, "l1"),
                                           self.key_literal(kt, f"{tag}{self.n}")]) \
                    if typ == kt else args[i]
            if name == "message_ids" and typ == f"{kt}[]":
                args[i] = f"ARRAY[{self.key_literal(kt, 'c1')}, {self.key_literal(kt, tag + str(self.n))}]"
        if fn["name"] in ("upsert", "transition", "transition_key", "guard_transitions", "unguard_transitions") and \
                self.rng.random() < 0.5:
            args[0] = f"'{t}'"
        return self.build_call(fn, args)

    def case_reentry(self):
        self.n += 1
        bodies = self.rng.sample(REENTRY, self.rng.choice([1, 1, 2]))
        timing = self.rng.choice(["AFTER INSERT", "AFTER INSERT", "BEFORE INSERT", "AFTER UPDATE",
                                  "AFTER INSERT OR UPDATE"])
        # Guarded by depth: a trigger that claims in its own inbox fires itself again.
        body = "IF pg_trigger_depth() < 2 THEN " + "; ".join(b for _, b in bodies) + "; END IF"
        ret = "NEW" if timing.startswith("BEFORE") else "NULL"
        setup = [f"SET LOCAL ROLE {OWNER}", "SELECT inbox.create_inbox('fz.r', 'text')",
                 f"CREATE FUNCTION fz.cb() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN {body}; RETURN {ret}; END$$",
                 f"CREATE TRIGGER cb {timing} ON fz.r FOR EACH ROW EXECUTE FUNCTION fz.cb()"]
        if self.rng.random() < 0.3:
            setup.append("SELECT inbox.claim('fz.r', 'warm')")
        call = self.rng.choice(REENTRY_CALLS)
        self.run_case(setup, [call], f"{timing} trigger: " + "+".join(k for k, _ in bodies))

    def case_nobody(self):
        """A role with no rights on the inbox must get an error, never data."""
        funcs = [f for f in self.functions if f["types"][:1] == ["regclass"] and f["name"] != "live_counters"]
        fn = self.rng.choice(funcs)
        self.n += 1
        inbox = self.inbox_for(fn)
        if fn["name"].endswith("_sharded"):
            self.cur_shard = CLAIMED_SHARD[inbox.strip("'")]
        args = [self.good_value(fn, i, inbox) for i in range(len(fn["types"]))]
        keyname = self.rng.choice(["claimed", "completed_lease", "live_lease", "fresh"])
        for i, (name, typ) in enumerate(zip(fn["names"], fn["types"])):
            if name in ("message_id", "key") and typ in ("text", "uuid", "bigint") and fn["name"] not in (
                    "upsert", "transition"):
                pool = dict({"text": TEXT_IDS, "uuid": UUID_IDS, "bigint": BIGINT_IDS}[typ])
                args[i] = fmt(pool[keyname], self.n)
            if fn["name"] in ("create_inbox", "create_sharded_inbox") and name == "name":
                args[i] = fmt("'fz.nobody_{n}'", self.n)
        call = self.build_call(fn, args)
        null_ok = fn["name"] in ("result", "oldest_claim", "position")

        def check(rows_by_call):
            rows = rows_by_call[-1]
            if null_ok and (rows == [(None,)] or rows == []):
                return []
            return [(fn["name"], "wrong answer: role without rights got an answer")]
        self.run_case([f"SET LOCAL ROLE {NOBODY}"], [call], f"no rights, key {keyname}", check=check)

    def case_lock_order(self):
        """Rights are checked before locks: a role without rights must get 42501 at once,
        not queue behind the owner's lock (and make every later writer queue behind it)."""
        funcs = [f for f in self.functions if f["types"][:1] == ["regclass"] and f["name"] != "live_counters"]
        fn = self.rng.choice(funcs)
        self.n += 1
        target = "fz.orders" if fn["name"] in ("upsert", "transition", "transition_key",
                                               "guard_transitions", "unguard_transitions") else self.inbox_for(fn).strip("'")
        args = [self.good_value(fn, i, f"'{target}'") for i in range(len(fn["types"]))]
        # An argument that reads the locked table (the current token) would wait in
        # the caller's own query, before the function runs: use a constant.
        args = ["1" if "FROM" in a and target in a else a for a in args]
        call = self.build_call(fn, args)
        mode = self.rng.choice(["ACCESS EXCLUSIVE", "EXCLUSIVE", "SHARE"])
        try:
            holder = self.connect(user=OWNER)
            holder.execute("BEGIN")
            holder.execute(f"LOCK TABLE {target} IN {mode} MODE")
        except psycopg.Error:
            return
        try:
            note = f"SELECT 'another session holds: BEGIN; LOCK TABLE {target} IN {mode} MODE' AS first"
            self.run_case([note, f"SET LOCAL ROLE {NOBODY}", "SET LOCAL lock_timeout = '500ms'"], [call],
                          "no rights, the owner holds a lock", lock_probe=True)
        finally:
            try:
                holder.close()
            except Exception:  # noqa: BLE001
                pass

    def case_dedup_trigger(self):
        self.n += 1
        kind, targs = self.rng.choice(DEDUP_TRIGGERS)
        timing = self.rng.choice(DEDUP_TIMINGS)
        level = "FOR EACH ROW" if self.rng.random() < 0.85 else "FOR EACH STATEMENT"
        setup = [f"SET LOCAL ROLE {OWNER}",
                 "CREATE TABLE fz.ev (event_id text, payload jsonb, n bigint)",
                 f"CREATE TRIGGER d {timing} ON fz.ev {level} EXECUTE FUNCTION inbox.dedup_trigger({targs})"]
        if "temp" in kind:
            setup.insert(1, TEMP_SETUP["temp_inbox_shape"])
        if self.rng.random() < 0.3:
            setup.append("ALTER TABLE fz.ev ALTER COLUMN event_id TYPE bigint USING NULL")
        if self.rng.random() < 0.2:
            setup.append("ALTER TABLE fz.events_seen ALTER COLUMN message_id TYPE bigint USING hashtext(message_id)")
        calls = [self.rng.choice([
            "INSERT INTO fz.ev VALUES ('e1', '{}', 1), ('e1', '{}', 2), (NULL, NULL, 3)",
            "INSERT INTO fz.ev SELECT 'k' || (g % 7), NULL, g FROM generate_series(1, 50) g",
            "INSERT INTO fz.ev VALUES (repeat('x', 1048576), NULL, 1)",
            "INSERT INTO fz.ev VALUES ('e1', NULL, 1); UPDATE fz.ev SET event_id = 'e2'",
        ])]
        self.run_case(setup, calls, f"dedup_trigger({kind}) {timing} {level}")

    def case_views(self):
        """One role's objects must not break a shared view for another role."""
        self.n += 1
        breakers = [
            ("drop_inbox_pk", "ALTER TABLE fz.m DROP CONSTRAINT m_pkey"),
            ("retype_inbox_key", "ALTER TABLE fz.m ALTER COLUMN message_id TYPE int4 USING 1"),
            ("guard_trigger_not_json", "CREATE TRIGGER inbox_guard_x BEFORE UPDATE ON fz.m FOR EACH ROW "
                                       "EXECUTE FUNCTION inbox.guard_trigger('message_id', 'not json')"),
            ("guard_trigger_no_args", "CREATE TRIGGER inbox_guard_y BEFORE UPDATE ON fz.m FOR EACH ROW "
                                      "EXECUTE FUNCTION inbox.guard_trigger()"),
            ("temp_guard_trigger", "CREATE TEMP TABLE tg (s text); CREATE TRIGGER g BEFORE UPDATE ON tg "
                                   "FOR EACH ROW EXECUTE FUNCTION inbox.guard_trigger('s', '{\"a\":')"),
            ("drop_claimed_at", "ALTER TABLE fz.m DROP COLUMN claimed_at"),
            ("rls_false", "ALTER TABLE fz.m ENABLE ROW LEVEL SECURITY; ALTER TABLE fz.m FORCE ROW LEVEL SECURITY"),
            ("advance_then_revoke", "SELECT inbox.advance('fz.m', 't', 0, 1); REVOKE ALL ON fz.m FROM " + OWNER),
        ]
        kind, sql = self.rng.choice(breakers)
        view = self.rng.choice(["inbox.stats", "inbox.state_machines", "inbox.streams", "inbox.inboxes"])
        setup = [f"SET LOCAL ROLE {OWNER}", "SELECT inbox.create_inbox('fz.m', 'text', '1 day')",
                 "SELECT inbox.claim('fz.m', 'x')"] + split_steps(sql) + \
                [f"SET LOCAL ROLE {NOBODY}"]
        call = f"SELECT * FROM {view}"  # every column: count(*) would skip them
        res = self.run_case(setup, [call], f"{view} after another role's {kind}")
        # An ordinary error from the view itself (not from the setup) is the defect here.
        if res and res[0] == len(setup) and res[1].startswith("error:"):
            self.record(view.split(".")[1], "wrong answer: shared view fails for another role",
                        kind, res[1] + " " + res[2], ["BEGIN"] + setup + [call, "ROLLBACK"],
                        standalone_check=False)

    def case_committed_oracle(self):
        """Claims and leases across committed transactions and fresh sessions."""
        self.n += 1
        kt = self.rng.choice(["text", "uuid", "bigint"])
        t = f"fz.dc{self.n}"
        tn = f"dc{self.n}"
        try:
            a = self.connect(user=OWNER)
            b = self.connect(user=OWNER)
        except psycopg.Error:
            return
        steps = []
        kind = f"committed {kt} inbox"

        def run(conn, s):
            steps.append(s)
            j, outcome, detail, rows = self.run_statements([s], conn=conn, in_txn=False)
            if outcome in ("crash", "crash-victim"):
                outcome = "crash"
                crashed.append(True)
                time.sleep(0.5)
                self.wait_for_server()
                self.new_log_crashes()
            return outcome, detail, rows
        crashed = []
        try:
            self.stats["cases"] += 1
            out, _, _ = run(a, f"SELECT inbox.create_inbox('{t}', '{kt}', "
                               f"{self.rng.choice(['NULL', quote('1 day')])})")
            if out != "ok":
                return
            mut = None
            if self.rng.random() < 0.7:
                mut = self.rng.choice(MUTATIONS)
                for s in split_steps(mut[1].format(t=t, tn=tn)):
                    out, detail, _ = run(a, s)
                    if out == "crash" or out.startswith("XX") or out == "hang":
                        crashed.append(out == "crash")
                        self.record(self.func_of(s), out, f"committed {kt} inbox after {mut[0]}", detail,
                                    list(steps), standalone_check=False)
                        return
                if mut[0] == "rename_table":
                    t = f"fz.{tn}_renamed"
            k = self.key_literal(kt, f"k{self.n}")
            fresh = {"claim": (f"SELECT inbox.claim('{t}', {k})", lambda r: r == [(True,)]),
                     "try_claim": (f"SELECT inbox.try_claim('{t}', {k})", lambda r: r == [("claimed",)]),
                     "claim_many": (f"SELECT * FROM inbox.claim_many('{t}', ARRAY[{k}])", lambda r: bool(r)),
                     "claim_apply": (f"SELECT inbox.claim_apply('{t}', {k}, 'SELECT 1')",
                                     lambda r: r == [("applied",)]),
                     "claim_fingerprint": (f"SELECT inbox.claim('{t}', {k}, inbox.fingerprint('{{}}'))",
                                           lambda r: r == [(True,)])}
            kind = f"committed {kt} inbox" + (f" after {mut[0]}" if mut else "")
            first, second = self.rng.choice(list(fresh)), self.rng.choice(list(fresh))
            for conn, which in ((a, first), (b, second)):
                out, detail, rows = run(conn, fresh[which][0])
                if out == "crash" or out.startswith("XX") or out == "hang":
                    crashed.append(out == "crash")
                    self.record(which, out, kind, detail, list(steps), standalone_check=False)
                    return
                if out != "ok" or not fresh[which][1](rows):
                    break
            else:
                self.record(second, "wrong answer: id claimed twice", kind,
                            "two fresh answers for one id", list(steps), standalone_check=False)
            # Leases: two acquires of one key from two sessions, no takeover possible.
            lk = self.key_literal(kt, f"lease{self.n}")
            s = f"SELECT status FROM inbox.acquire('{t}', {lk}, '1 hour')"
            answers = []
            for conn in (a, b):
                out, detail, rows = run(conn, s)
                if out == "crash" or out.startswith("XX") or out == "hang":
                    crashed.append(out == "crash")
                    self.record("acquire", out, kind, detail, list(steps), standalone_check=False)
                    return
                answers.append(rows if out == "ok" else None)
            if answers == [[("acquired",)], [("acquired",)]]:
                self.record("acquire", "wrong answer: two live leases for one key", kind,
                            "both acquire calls answered acquired", list(steps), standalone_check=False)
            if self.rng.random() < 0.3:
                cnt = f"SELECT count(*) FROM {t} GROUP BY message_id HAVING count(*) > 1"
                out, _, rows = run(a, cnt)
                if out == "ok" and rows:
                    self.record("claim", "wrong answer: two rows for one id", kind,
                                "duplicate message_id rows", list(steps), standalone_check=False)
        finally:
            for c in (a, b):
                try:
                    c.close()
                except Exception:  # noqa: BLE001
                    pass
            try:
                self.main_conn().execute(f"DROP TABLE IF EXISTS {t}, fz.{tn}_renamed, fz.{tn}_parent, "
                                         f"fz.{tn}_child, fz.{tn}_par CASCADE")
                self.main_conn().execute(f"DROP FUNCTION IF EXISTS fz.skip_{tn}(), fz.skipu_{tn}()")
            except psycopg.Error:
                self.conn = None
            lines = self.new_log_crashes()
            if lines and not crashed:
                self.wait_for_server()
                for msg, query in lines:
                    self.record(self.func_of(query) if query else "unknown", "crash",
                                "background worker" if "background worker" in msg else kind,
                                msg, list(steps) + ["-- crashed process was running: " + (query or "?")],
                                standalone_check=False)

    # ---- sharded inboxes ----------------------------------------------------------
    @staticmethod
    def shard_literal(st, s):
        """A shard key value of type st, derived from s."""
        return {"bigint": f"(hashtext('{s}')::bigint)", "int4": f"hashtext('{s}')", "text": f"'{s}'",
                "uuid": f"md5('{s}')::uuid", "fz.dpos": f"(abs(hashtext('{s}')::bigint) + 1)"}[st]

    def sharded_call(self, fn, t, st, kt, tag):
        """A call of fn on sharded inbox t with otherwise good arguments."""
        self.cur_shard = self.shard_literal(st, self.rng.choice(["s1", "s2", f"{tag}{self.n}"]))
        return self.mutation_call(fn, t, kt, tag)

    def sharded_claim(self, how, t, shard, k):
        if how == "claim":
            return f"SELECT inbox.claim_sharded('{t}', {shard}, {k})"
        if how == "claim_many":
            return f"SELECT * FROM inbox.claim_many_sharded('{t}', {shard}, ARRAY[{k}])"
        return f"SELECT inbox.claim_apply_sharded('{t}', {shard}, {k}, 'SELECT 1')"

    SHARDED_FRESH = {"claim": lambda r: r == [(True,)], "claim_many": lambda r: bool(r),
                     "claim_apply": lambda r: r == [("applied",)]}

    def sharded_oracle(self, t, sk, st, kt, retention, verify):
        """Calls that claim one fresh (shard key, id), look where the claim was stored
        (as superuser, so that no policy hides it), claim it again, then the same id
        under another shard key value; with a retention window, the claim once expired
        must be fresh again.  Returns (calls, check(rows of the calls that ran)): the
        check also judges the calls that ran before one failed."""
        a, b = self.shard_literal(st, f"o{self.n}"), self.shard_literal(st, f"p{self.n}")
        k = self.key_literal(kt, f"o{self.n}")
        how = self.rng.choice(["claim", "claim_many", "claim_apply"])
        fresh = self.SHARDED_FRESH[how]
        stored = (f"SELECT count(*) FROM {t} WHERE {sk}::text = ({a})::text "
                  f"AND message_id::text = ({k})::text") if verify else "SELECT 1"
        calls = [self.sharded_claim(how, t, a, k), "RESET ROLE", stored, f"SET LOCAL ROLE {OWNER}",
                 self.sharded_claim(how, t, a, k), self.sharded_claim(how, t, b, k)]
        if retention:
            calls += ["SET LOCAL session_replication_role = replica",
                      f"UPDATE {t} SET claimed_at = claimed_at - interval '3 days' "
                      f"WHERE message_id::text = ({k})::text",
                      "SET LOCAL session_replication_role = origin", self.sharded_claim(how, t, a, k)]
        func = how + "_sharded"

        def check(r):
            out = []
            if not r or not fresh(r[0]):
                return out
            if verify and len(r) > 2 and r[2] != [(1,)]:
                out.append((func, "wrong answer: claim answered fresh but not stored under its shard key value"))
            if len(r) > 4 and fresh(r[4]):
                out.append((func, "wrong answer: id claimed twice (same transaction)"))
            if len(r) > 5 and not fresh(r[5]):
                out.append((func, "wrong answer: duplicate for a fresh (shard key, id)"))
            if retention and len(r) == len(calls) and not fresh(r[-1]):
                out.append((func, "wrong answer: an expired claim answered duplicate"))
            return out
        return calls, check

    def case_sharded_mutation(self):
        """An owner changes its sharded inbox; the claims must stay right or fail clearly."""
        self.n += 1
        raw, sk, st = self.rng.choice(SHARD_CONFIGS)
        kt = self.rng.choice(["text", "uuid", "bigint"])
        retention = self.rng.random() < 0.4
        t, tn = "fz.sm", "sm"
        setup = [f"SET LOCAL ROLE {OWNER}",
                 f"SELECT inbox.create_sharded_inbox('{t}', {quote(raw)}, '{st}', '{kt}', "
                 f"{quote('1 day') if retention else 'NULL'})",
                 f"SELECT inbox.claim_sharded('{t}', {self.shard_literal(st, 's1')}, {self.key_literal(kt, 'c1')})",
                 f"SELECT count(*) FROM inbox.claim_many_sharded('{t}', {self.shard_literal(st, 's2')}, "
                 f"ARRAY[{self.key_literal(kt, 'c1')}, {self.key_literal(kt, 'c2')}])"]
        funcs = [f for f in self.functions if f["types"][:1] == ["regclass"]]
        if self.rng.random() < 0.5:
            setup.append(self.sharded_call(self.rng.choice(funcs), t, st, kt, "p"))
        pool = SHARDED_MUTATIONS + [(k, s, False) for k, s in MUTATIONS if k in SHARDED_ALSO]
        picks = self.rng.sample(pool, self.rng.choice([1, 1, 1, 2, 3]))
        lossy = False
        for kind, sql, lossy_one in picks:
            lossy = lossy or lossy_one
            setup.extend(x.strip() for x in split_steps(sql.format(t=t, tn=tn, sk=sk, st=st)))
            if kind == "rename_table":
                t, tn = "fz.sm_renamed", "sm_renamed"
        extra = self.sharded_call(self.rng.choice(funcs), t, st, kt, "x")
        oracle, check = self.sharded_oracle(t, sk, st, kt, retention, verify=not lossy)
        first = self.rng.random() < 0.5
        calls = [extra] + oracle if first else oracle + [extra]
        off = 1 if first else 0
        kinds = "+".join(sorted(k for k, _, _ in picks))
        # The class is the changes made: the types are in the reproduction.
        self.run_case(setup, calls, f"sharded inbox after {kinds}",
                      check=lambda rows: check(rows[off:off + len(oracle)]), partial_check=True)

    def case_sharded_committed(self):
        """Claims of a sharded inbox across committed transactions and two sessions."""
        self.n += 1
        raw, sk, st = self.rng.choice(SHARD_CONFIGS)
        kt = self.rng.choice(["text", "uuid", "bigint"])
        t, tn = f"fz.ds{self.n}", f"ds{self.n}"
        try:
            a = self.connect(user=OWNER)
            b = self.connect(user=OWNER)
        except psycopg.Error:
            return
        steps = []
        bad = []

        def run(conn, s):
            steps.append(s)
            _, outcome, detail, rows = self.run_statements([s], conn=conn, in_txn=False)
            if outcome in ("crash", "crash-victim") or outcome.startswith("XX") or outcome == "hang":
                outcome = "crash" if outcome.startswith("crash") else outcome
                bad.append(outcome)
                if outcome == "crash":
                    time.sleep(0.5)
                    self.wait_for_server()
                    self.new_log_crashes()
            return outcome, detail, rows
        kind = f"committed sharded {st} shard key, {kt} inbox"
        try:
            self.stats["cases"] += 1
            out, _, _ = run(a, f"SELECT inbox.create_sharded_inbox('{t}', {quote(raw)}, '{st}', '{kt}', "
                               f"{self.rng.choice(['NULL', quote('1 day')])})")
            if out != "ok":
                return
            lossy = False
            if self.rng.random() < 0.7:
                mkind, sql, lossy = self.rng.choice(SHARDED_MUTATIONS)
                kind += " after " + mkind
                for s in split_steps(sql.format(t=t, tn=tn, sk=sk, st=st)):
                    out, detail, _ = run(a, s)
                    if bad:
                        self.record(self.func_of(s), bad[0], kind, detail, list(steps), standalone_check=False)
                        return
            sa, sb = self.shard_literal(st, f"a{self.n}"), self.shard_literal(st, f"b{self.n}")
            k = self.key_literal(kt, f"k{self.n}")
            first, second = self.rng.choice(list(self.SHARDED_FRESH)), self.rng.choice(list(self.SHARDED_FRESH))
            answers = []
            for conn, how, shard in ((a, first, sa), (b, second, sa), (b, second, sb)):
                out, detail, rows = run(conn, self.sharded_claim(how, t, shard, k))
                if bad:
                    self.record(how + "_sharded", bad[0], kind, detail, list(steps), standalone_check=False)
                    return
                answers.append(self.SHARDED_FRESH[how](rows) if out == "ok" else None)
            if answers[0] and answers[1]:
                self.record(second + "_sharded", "wrong answer: id claimed twice", kind,
                            "two fresh answers for one (shard key, id)", list(steps), standalone_check=False)
            if answers[0] and answers[2] is False:
                self.record(second + "_sharded", "wrong answer: duplicate for a fresh (shard key, id)", kind,
                            "the id under another shard key value answered duplicate", list(steps),
                            standalone_check=False)
            if answers[0] and not lossy:
                verify = (f"SELECT count(*) FROM {t} WHERE {sk}::text = ({sa})::text "
                          f"AND message_id::text = ({k})::text")
                out, _, rows = run(self.main_conn(), verify)
                if out == "ok" and rows != [(1,)]:
                    self.record(first + "_sharded",
                                "wrong answer: claim answered fresh but not stored under its shard key value",
                                kind, "no row for the (shard key, id) claimed", list(steps), standalone_check=False)
        finally:
            for c in (a, b):
                try:
                    c.close()
                except Exception:  # noqa: BLE001
                    pass
            try:
                self.main_conn().execute(f"DROP TABLE IF EXISTS fz.{tn}_parent, fz.{tn}_child, {t}, "
                                         f"fz.{tn}_par CASCADE")
                self.main_conn().execute(", ".join(f"fz.{f}_{tn}()" for f in ("tsk", "tsn", "tid", "tsp", "tsh", "tsu"))
                                         .join(["DROP FUNCTION IF EXISTS ", ""]))
            except psycopg.Error:
                self.conn = None
            lines = self.new_log_crashes()
            if lines and "crash" not in bad:
                self.wait_for_server()
                for msg, query in lines:
                    self.record(self.func_of(query) if query else "unknown", "crash",
                                "background worker" if "background worker" in msg else kind,
                                msg, list(steps) + ["-- crashed process was running: " + (query or "?")],
                                standalone_check=False)

    def case_sharded_reentry(self):
        """Triggers on a sharded inbox that claim in it again, alter or drop it."""
        self.n += 1
        bodies = self.rng.sample(SHARDED_REENTRY, self.rng.choice([1, 1, 2]))
        timing = self.rng.choice(["AFTER INSERT", "AFTER INSERT", "BEFORE INSERT", "AFTER UPDATE",
                                  "AFTER INSERT OR UPDATE"])
        body = "IF pg_trigger_depth() < 2 THEN " + "; ".join(b for _, b in bodies) + "; END IF"
        ret = "NEW" if timing.startswith("BEFORE") else "NULL"
        setup = [f"SET LOCAL ROLE {OWNER}",
                 "SELECT inbox.create_sharded_inbox('fz.rs', 'acct', 'bigint', 'text', "
                 f"{self.rng.choice(['NULL', quote('1 day')])})",
                 f"CREATE FUNCTION fz.cbs() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN {body}; RETURN {ret}; END$$",
                 f"CREATE TRIGGER cbs {timing} ON fz.rs FOR EACH ROW EXECUTE FUNCTION fz.cbs()"]
        if self.rng.random() < 0.3:
            setup.append("SELECT inbox.claim_sharded('fz.rs', 1, 'warm')")
        call = self.rng.choice(SHARDED_REENTRY_CALLS)

        def check(rows):
            moves = any(k in ("update_own_shard_key", "delete_others") for k, _ in bodies)
            if not moves and call.count("claim_sharded('fz.rs', 1, 'a')") == 2 and rows[-1] == [(True, True)]:
                return [("claim_sharded", "wrong answer: id claimed twice (same statement)")]
            return []
        self.run_case(setup, [call], f"sharded {timing} trigger: " + "+".join(k for k, _ in bodies), check=check)

    def case_create_sharded(self):
        """create_sharded_inbox with hostile names and types: refused clearly, or an
        inbox whose shard key is what was asked for, permanent, and that claims."""
        self.n += 1
        nk, ne = self.rng.choice(SHARD_NAMES) if self.rng.random() < 0.5 else ("good", "'acct_{n}'")
        tk, te, sample = self.rng.choice(SHARD_TYPES) if self.rng.random() < 0.8 else SHARD_TYPES[1]
        rk, re_ = self.rng.choice(NAMES) if self.rng.random() < 0.3 else ("new", "'fz.new_{n}'")
        kt = self.rng.choice(["text", "uuid", "bigint"])
        setup = [x.strip() for x in split_steps(TEMP_SETUP[tk])] if tk in TEMP_SETUP else []
        if self.rng.random() < 0.8:
            setup.append(f"SET LOCAL ROLE {OWNER}")
        create = (f"SELECT inbox.create_sharded_inbox({fmt(re_, self.n)}, {fmt(ne, self.n)}, {te}, '{kt}', "
                  f"{self.rng.choice(['NULL', quote('1 day')])})")
        newest = "(SELECT relid FROM inbox.registry ORDER BY created_at DESC, relid::oid DESC LIMIT 1)"
        shape = ("SELECT a.atttypmod, format_type(a.atttypid, a.atttypmod), EXISTS (SELECT 1 FROM pg_namespace n "
                 "WHERE n.oid IN (t.typnamespace, e.typnamespace, b.typnamespace) AND n.nspname LIKE 'pg\\_temp\\_%') "
                 "FROM inbox.registry r JOIN pg_attribute a ON a.attrelid = r.relid AND a.attname = r.shard_key "
                 "JOIN pg_type t ON t.oid = a.atttypid LEFT JOIN pg_type e ON e.oid = t.typelem "
                 f"LEFT JOIN pg_type b ON b.oid = t.typbasetype WHERE r.relid = {newest}")
        # The class is the type's: the names are in the reproduction.
        kind = f"shard_key_type={tk}"

        def check_shape(rows):
            if not rows[-1]:
                return [("create_sharded_inbox", "wrong answer: the registered shard key names no column")]
            typmod, typ, temp = rows[-1][0]
            out = []
            if typmod != -1:
                out.append(("create_sharded_inbox", f"wrong answer: shard key column made {typ}"))
            if temp:
                out.append(("create_sharded_inbox", "wrong answer: a permanent inbox's shard key has a temporary type"))
            return out
        res = self.run_case(setup, [create, shape], kind, check=check_shape)
        if sample is None or res[0] is not None:
            return
        k = self.key_literal(kt, f"x{self.n}")
        claim = f"SELECT inbox.claim_sharded({newest}, {sample}, {k})"

        def check_claims(rows):
            if rows[-2] == [(True,)] and rows[-1] == [(True,)]:
                return [("claim_sharded", "wrong answer: id claimed twice (same transaction)")]
            return []
        self.run_case(setup, [create, claim, claim], kind, check=check_claims)

    # ---- sqlsmith ---------------------------------------------------------------
    def run_sqlsmith(self, count):
        exe = shutil.which("sqlsmith")
        if not exe:
            self.sqlsmith_status = "sqlsmith is not installed (Debian package sqlsmith): skipped"
            return
        target = " ".join(f"{k}={v}" for k, v in self.dsn(user=OWNER).items() if k != "application_name")
        queries = []
        start = time.time()
        seed = self.args.seed
        while len(queries) < count and time.time() - start < self.args.sqlsmith_time:
            try:
                out = subprocess.run([exe, f"--target={target}", f"--seed={seed}", "--dry-run",
                                      "--exclude-catalog", f"--max-queries={min(count, 2000)}"],
                                     capture_output=True, timeout=max(10, self.args.sqlsmith_time),
                                     text=True, errors="replace").stdout
            except subprocess.TimeoutExpired as e:
                out = (e.stdout or b"").decode("utf-8", "replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
            qs = [q.strip() for q in out.split(";\n") if q.strip()]
            self.stats["sqlsmith_generated"] += len(qs)
            # Only queries that reach the extension; none that sleep or signal backends
            # on purpose (a timeout there would be sqlsmith's doing, not ours).
            queries += [q for q in qs if re.search(r"\binbox\.\w+\(|\binbox\.(stats|state_machines|streams)\b", q)
                        and not re.search(r"pg_sleep|pg_terminate_backend|pg_cancel_backend|pg_advisory", q)]
            if len(qs) < min(count, 2000):
                break
            seed += 1
            count -= len(qs)
        self.sqlsmith_status = (f"sqlsmith {self.stats['sqlsmith_generated']} queries generated (seed "
                                f"{self.args.seed}), {len(queries)} call inbox.* and were run")
        self.in_sqlsmith = True
        try:
            for q in queries:
                if self.out_of_time():
                    break
                self.stats["sqlsmith_run"] += 1
                self.run_case([f"SET LOCAL ROLE {OWNER}"], [q], "sqlsmith")
        finally:
            self.in_sqlsmith = False

    @staticmethod
    def ours(source_file):
        """Was an error raised in the extension's own code (a file of src/)?"""
        return bool(source_file) and os.path.exists(os.path.join(REPO_SRC, os.path.basename(source_file)))

    def out_of_time(self):
        return time.time() > self.deadline

    # ---- main loop ----------------------------------------------------------------
    def run(self):
        t0 = time.time()
        self.deadline = t0 + self.args.duration
        self.prepare()
        self.new_log_crashes()
        smith_deadline = time.time()
        if self.args.sqlsmith_queries > 0:
            try:
                self.run_sqlsmith(self.args.sqlsmith_queries)
            except ServerGone:
                self.deadline = 0
        smith_time = time.time() - smith_deadline
        strategies = [(self.case_hostile_arg, 40), (self.case_claim_apply, 10), (self.case_mutation, 22),
                      (self.case_reentry, 8), (self.case_nobody, 8), (self.case_dedup_trigger, 4),
                      (self.case_views, 3), (self.case_committed_oracle, 5), (self.case_retention, 2),
                      (self.case_lock_order, 3), (self.case_sharded_mutation, 12),
                      (self.case_sharded_committed, 3), (self.case_sharded_reentry, 4),
                      (self.case_create_sharded, 5)]
        if self.args.strategies:
            wanted = set(self.args.strategies.split(","))
            strategies = [(f, w) for f, w in strategies if f.__name__[len("case_"):] in wanted]
            if not strategies:
                raise SystemExit("--strategies: none of " + self.args.strategies)
        funcs, weights = zip(*strategies)
        cases = 0
        while not self.out_of_time() and (self.args.cases == 0 or cases < self.args.cases):
            f = self.rng.choices(funcs, weights)[0]
            cases += 1
            try:
                f()
            except ServerGone:
                self.record(f.__name__, "crash", "server did not restart", "recovery failed; see the server log",
                            ["(see the server log)"], standalone_check=False)
                break
            except psycopg.Error:
                # A lost connection outside a call (BEGIN, say): find out why.
                self.conn = None
                self.wait_for_server()
                for msg, query in self.new_log_crashes():
                    self.record(self.func_of(query) if query else "unknown", "crash",
                                "background worker" if "background worker" in msg else "between calls",
                                msg, [query or "(see the server log)"], standalone_check=False)
            if cases % 200 == 0:
                self.ensure_extension()
        self.elapsed = time.time() - t0
        self.smith_time = smith_time
        return self.report()

    def ensure_extension(self):
        try:
            c = self.main_conn()
            if not c.execute("SELECT 1 FROM pg_extension WHERE extname = %s", (EXT,)).fetchone():
                print("# the extension went away: recreating the database", file=sys.stderr)
                c.close()
                self.conn = None
                self.prepare()
        except psycopg.Error:
            self.conn = None

    def report(self):
        s = self.stats
        classes = sorted(self.failures.values(), key=lambda f: (f.outcome, f.func, f.kind))
        oracles = [
            ("no server crash", lambda f: f.outcome == "crash"),
            ("no internal error (XX000/XX001/XX002)", lambda f: f.outcome.startswith("XX")),
            ("no hang (statement_timeout %gs)" % self.args.timeout, lambda f: f.outcome == "hang"),
            ("no id claimed twice", lambda f: "claimed twice" in f.outcome or "two rows" in f.outcome),
            ("no two live leases for one key", lambda f: "two live leases" in f.outcome),
            ("no answer to a role without rights", lambda f: "without rights" in f.outcome),
            ("no resource-leak warning", lambda f: f.outcome == "leak"),
            ("sharded inboxes: no claim stored under another shard key value, no duplicate for a fresh "
             "(shard key, id), no expired claim answered duplicate",
             lambda f: any(x in f.outcome for x in ("(shard key, id)", "shard key value", "expired claim"))),
            ("create_sharded_inbox: the shard key column is what was asked for and permanent",
             lambda f: f.func == "create_sharded_inbox" and f.outcome.startswith("wrong answer")),
        ]
        lines = []
        n = 0
        for name, pred in oracles:
            bad = [f for f in classes if pred(f)]
            if not bad:
                n += 1
                lines.append(f"ok {n} - {name}")
        sqlsmith_ok = not any(f.kind == "sqlsmith" for f in classes)
        if shutil.which("sqlsmith") is None:
            n += 1
            lines.append(f"ok {n} # SKIP sqlsmith is not installed")
        elif sqlsmith_ok and self.args.sqlsmith_queries > 0:
            n += 1
            lines.append(f"ok {n} - sqlsmith: no crash, internal error or hang")
        for f in classes:
            n += 1
            lines.append(f"not ok {n} - {f.func}: {f.cls[1]} [{f.kind}] x{f.count}")
        print(f"1..{n}")
        for ln in lines:
            print(ln)
        sys.stdout.flush()
        out = sys.stderr
        print(f"# fuzz: seed {self.args.seed}, {self.elapsed:.0f} s, {s['cases']} cases, "
              f"{s['statements']} statements, {s['errors']} ordinary errors", file=out)
        print(f"# {self.sqlsmith_status} ({self.smith_time:.0f} s)", file=out)
        if self.restarts:
            print(f"# the server failed to recover after a crash {self.restarts} time(s) and was restarted", file=out)
        print(f"# crashes {s['crashes']}, internal errors {s['internal']}, hangs {s['hangs']}, "
              f"wrong answers {s['wrong']}, leak warnings {s['leaks']}; {len(classes)} distinct classes",
              file=out)
        for (func, outcome), (ncls, seen) in sorted(self.grouped(classes).items()):
            print(f"#   {func}: {outcome}: {ncls} classes, seen {seen}x", file=out)
        if self.args.verbose:
            print("# most frequent ordinary errors:", file=out)
            for k, v in sorted(self.error_kinds.items(), key=lambda kv: -kv[1])[:40]:
                print(f"#   {v:6d} {k}", file=out)
        for f in classes:
            print(f"#\n# --- {f.func}: {f.cls[1]} [{f.kind}] seen {f.count}x"
                  + ("" if f.standalone is None else
                     f"; reproduces on a fresh connection: {'yes' if f.standalone else 'no'}"), file=out)
            if f.detail and f.detail not in f.cls[1]:
                print(f"#     {f.detail[:300]}", file=out)
            for stmt in f.repro:
                print("#     " + (stmt if len(stmt) < 400 else stmt[:400] + " …") + ";", file=out)
        if self.args.report:
            with open(self.args.report, "w") as fh:
                fh.write(self.markdown(classes))
        return 1 if classes else 0

    @staticmethod
    def grouped(classes):
        groups = {}
        for f in classes:
            key = (f.func, f.cls[1])
            n, seen = groups.get(key, (0, 0))
            groups[key] = (n + 1, seen + f.count)
        return groups

    def markdown(self, classes):
        s = self.stats
        out = [f"seed {self.args.seed}, {self.elapsed:.0f} s, {s['cases']} cases, {s['statements']} statements; "
               f"{self.sqlsmith_status}", "",
               f"crashes {s['crashes']}, internal errors {s['internal']}, hangs {s['hangs']}, wrong answers "
               f"{s['wrong']}, leak warnings {s['leaks']}; {len(classes)} distinct classes", ""]
        out.append("| function | outcome | classes | times seen |")
        out.append("|---|---|---|---|")
        for (func, outcome), (ncls, seen) in sorted(self.grouped(classes).items()):
            out.append(f"| {func} | {outcome} | {ncls} | {seen} |")
        out.append("")
        for f in classes:
            out.append(f"- **{f.func}: {f.cls[1]}** [{f.kind}] seen {f.count}x"
                       + ("" if f.standalone is None else f", standalone: {'yes' if f.standalone else 'no'}"))
            out.append("  ```sql")
            # Whole statements here (a sqlsmith query is the reproduction), up to 20,000 bytes.
            out += ["  " + (st if len(st) < 20000 else st[:400] + " …") + ";" for st in f.repro]
            out.append("  ```")
        return "\n".join(out) + "\n"


def split_steps(sql):
    """Split "a; b" into statements, keeping $$ bodies whole."""
    parts, cur = [], ""
    for piece in sql.split("; "):
        cur = cur + "; " + piece if cur else piece
        if cur.count("$$") % 2 == 0:
            parts.append(cur.strip())
            cur = ""
    if cur:
        parts.append(cur.strip())
    return parts


def quote(s):
    return "'" + s.replace("'", "''") + "'"


def split_sql(text):
    """Split on semicolons at line ends, keeping dollar-quoted bodies whole."""
    stmts, cur, in_dollar = [], [], False
    for line in text.splitlines():
        if not line.strip() and not cur:
            continue
        cur.append(line)
        if line.count("$$") % 2 == 1:
            in_dollar = not in_dollar
        if not in_dollar and line.rstrip().endswith(";"):
            stmts.append("\n".join(cur).rstrip().rstrip(";"))
            cur = []
    if cur:
        stmts.append("\n".join(cur))
    return stmts


# ---------------------------------------------------------------------------
# The throwaway cluster
# ---------------------------------------------------------------------------

def start_cluster(d, port):
    os.makedirs(d, exist_ok=True)
    data, sock = os.path.join(d, "data"), os.path.join(d, "sock")
    os.makedirs(sock, exist_ok=True)
    subprocess.run(["initdb", "-D", data, "-A", "trust", "-U", "postgres", "-E", "UTF8", "--locale=C",
                    "--no-sync"], check=True, capture_output=True)
    with open(os.path.join(data, "postgresql.conf"), "a") as f:
        f.write(f"""
port = {port}
listen_addresses = ''
unix_socket_directories = '{sock}'
fsync = off
shared_preload_libraries = '{EXT}'
idempotent_inbox.max_inboxes = 64
log_line_prefix = '%m [%p] %e '
log_min_error_statement = panic
max_prepared_transactions = 10
restart_after_crash = on
""")
    log = os.path.join(d, "server.log")
    subprocess.run(["pg_ctl", "-D", data, "-l", log, "-w", "-t", "60", "-s", "start"], check=True)
    return sock, log, data


def stop_cluster(data):
    subprocess.run(["pg_ctl", "-D", data, "-m", "immediate", "-w", "-t", "60", "-s", "stop"],
                   capture_output=True)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seed", type=int, default=int(os.environ.get("FUZZ_SEED", 1)))
    p.add_argument("--duration", type=float, default=None, help="seconds for the whole run (600; --short: 75)")
    p.add_argument("--cases", type=int, default=None, help="stop after this many cases (0, the default: by time; --short: 1500)")
    p.add_argument("--sqlsmith-queries", type=int, default=None,
                   help="queries sqlsmith generates; those calling inbox.* are run (20000; --short: 1000)")
    p.add_argument("--sqlsmith-time", type=float, default=None, help="seconds for sqlsmith to generate (120; --short: 20)")
    p.add_argument("--timeout", type=float, default=5, help="statement_timeout per call, seconds")
    p.add_argument("--short", action="store_true",
                   help="the make test configuration: 1500 cases, 1000 sqlsmith queries, at most 75 s")
    p.add_argument("--cluster", help="start a throwaway cluster in this directory (run as postgres)")
    p.add_argument("--host", default=os.environ.get("PGHOST", "/tmp"))
    p.add_argument("--port", type=int, default=int(os.environ.get("PGPORT", 5432)))
    p.add_argument("--log", help="the server log, to see crashes (set by --cluster)")
    p.add_argument("--minimize", action=argparse.BooleanOptionalAction, default=None,
                   help="shorten the reproduction of each crash and internal error (default: on, off with --short)")
    p.add_argument("--verbose", action="store_true", help="also list the most frequent ordinary errors")
    p.add_argument("--strategies", help="run only these driver strategies, comma-separated "
                                        "(hostile_arg, sharded_mutation, create_sharded...: the case_ methods)")
    p.add_argument("--report", help="also write the findings as markdown here")
    args = p.parse_args()
    args.data = None
    short = dict(cases=1500, duration=75, sqlsmith_queries=1000, sqlsmith_time=20)
    long = dict(cases=0, duration=600, sqlsmith_queries=20000, sqlsmith_time=120)
    short["minimize"], long["minimize"] = False, True
    for k, v in (short if args.short else long).items():
        if getattr(args, k) is None:
            setattr(args, k, v)
    data = None
    try:
        if args.cluster:
            args.port = args.port + 1
            args.host, args.log, data = start_cluster(args.cluster, args.port)
            args.data = data
        fz = Fuzzer(args)
        rc = fz.run()
    except Exception:  # noqa: BLE001
        print("1..1\nnot ok 1 - the fuzzer itself failed")
        traceback.print_exc()
        rc = 1
    finally:
        if data:
            stop_cluster(data)
    sys.exit(rc)


if __name__ == "__main__":
    main()
