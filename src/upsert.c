/*
 * upsert.c
 *		inbox.upsert and inbox.upsert_row: an idempotent write of a whole or partial
 *		row, keyed by the primary key or by the columns of a unique constraint.
 *		upsert takes a jsonb object; upsert_row a row of the table's own type, whose
 *		values are taken as they are (row_values_from_row).
 *
 * Outcomes:
 *	inserted	no row had the key
 *	updated		the row differed and was changed
 *	unchanged	the row already held these values (no version column)
 *	stale		with a version column: the stored version is newer or equal
 *
 * A replay must write nothing: no new row version, no row lock, no trigger.  So the
 * stored row is read first, from the index (direct_access.c) or, when the caller may not
 * read the table directly, with a SELECT, and compared byte for byte (image
 * equality, which needs no equality operator per type; in SQL the casts to record
 * keep the parser from turning it into a column-by-column comparison).  A row read
 * from the index that differs is changed in place, where the table allows it
 * (direct_access_update_row): the guarded UPDATE's work without the statement.
 * Otherwise, and when the row changed since it was read, a row that is missing
 * or differs goes to the guarded UPDATE or INSERT ... ON CONFLICT DO UPDATE,
 * whose WHERE repeats the same test so that a concurrent writer between the
 * two steps is still handled right.  Racing upserts of one new key both
 * succeed: ON CONFLICT turns the loser into an update.
 *
 * Columns absent from new_row keep their stored values on update and take their
 * defaults on insert; present ones are converted as jsonb_populate_record would
 * (row_values.c) and travel as typed parameters $1..$n, in column order, so the
 * statements are plain index lookups and inserts whose plans the statement cache
 * keeps per table and column set.
 *
 * A partitioned table's rows are routed by the executor, and RETURNING cannot read
 * xmax there (nor can a caller with column privileges only): the write is
 * INSERT ... DO NOTHING, then the guarded UPDATE, then a read of why neither wrote
 * (write_row_routed).  Under row-level security every read
 * is a SELECT through the policies, and a conflict with a row they hide is an error,
 * never "unchanged".
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/executor.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "commands/trigger.h"
#include "utils/rel.h"
#include "utils/rls.h"
#include "utils/typcache.h"

#include "adaptive.h"
#include "inbox.h"
#include "direct_access.h"
#include "row_values.h"
#include "shape_cache.h"
#include "signature.h"
#include "spi_util.h"
#include "statement_cache.h"
#include "table_shape.h"

typedef struct UpsertPlan
{
	Relation	rel;
	char	   *qualname;		/* for INSERT */
	char	   *target;			/* for SELECT and UPDATE: shape_target */
	bool		rls;			/* row security applies to the caller */
	bool		routed;			/* write with write_row_routed */
	Bitmapset  *present;		/* columns named by new_row */
	Bitmapset  *requested;		/* key columns as asked for, NULL: primary key */
	Bitmapset  *keys;			/* columns of the arbiter index */
	Oid			keyindex;
	AttrNumber	version;		/* or InvalidAttrNumber */
	Datum	   *row;			/* new_row's values, by attribute number - 1 */
	bool	   *rownulls;
	int		   *params;			/* attribute number -> $n of its value */
	int			nparams;
	Oid		   *types;
	Datum	   *values;
	char	   *nulls;
	bool		read_direct;	/* the row may be read from the index */
	bool		in_place;		/* and a changed row updated in place */
	bool		insert_direct;	/* a new row may be inserted without the executor */
	Datum	   *stored;			/* the row as read from the index, and where */
	bool	   *storednulls;
	ItemPointerData tid;
	CommandId	read_cid;		/* the command it was read in */
} UpsertPlan;

/* The key given as column names, or NULL for the primary key. */
static Bitmapset *
key_argument(FunctionCallInfo fcinfo, int argno, Relation rel)
{
	ArrayType  *array;
	Datum	   *names;
	bool	   *nulls;
	int			n;
	Bitmapset  *columns = NULL;

	if (PG_ARGISNULL(argno))
		return NULL;
	array = PG_GETARG_ARRAYTYPE_P(argno);
	deconstruct_array(array, TEXTOID, -1, false, TYPALIGN_INT, &names, &nulls, &n);
	if (n == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("key must name at least one column"),
				 errhint("Pass NULL to use the primary key.")));
	for (int i = 0; i < n; i++)
	{
		if (nulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("key column names must not be null")));
		columns = bms_add_member(columns, shape_column(rel, TextDatumGetCString(names[i])));
	}
	return columns;
}

/* Without the key, new_row names no row: refuse it rather than insert a half row. */
static void
CheckRowHasKey(UpsertPlan *plan)
{
	int			attnum = -1;

	while ((attnum = bms_next_member(plan->keys, attnum)) >= 0)
		if (!bms_is_member(attnum, plan->present))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("new_row must contain the key column %s",
							shape_column_name(plan->rel, attnum))));
}

/*
 * Last-writer-wins needs the writer's version, and a real one.  The row is a jsonb
 * object (upsert), or NULL when its values are already in plan->row (upsert_row).
 */
static void
CheckRowHasVersion(UpsertPlan *plan, Jsonb *row)
{
	const char *name;
	bool		absent;
	bool		isnull;

	if (plan->version == InvalidAttrNumber)
		return;
	name = NameStr(TupleDescAttr(RelationGetDescr(plan->rel), plan->version - 1)->attname);
	if (row != NULL)
	{
		JsonbValue *value = getKeyJsonValueFromContainer(&row->root, name, strlen(name), NULL);

		absent = value == NULL;
		isnull = !absent && value->type == jbvNull;
	}
	else
	{
		absent = !bms_is_member(plan->version, plan->present);
		isnull = !absent && plan->rownulls[plan->version - 1];
	}
	if (absent)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("new_row must contain the version column %s", quote_identifier(name))));
	if (isnull)
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("version column %s of new_row must not be null", quote_identifier(name))));
}

/*
 * The columns whose stored values decide between unchanged and updated: those
 * new_row names that an update would write.  Not the key's: the row was found
 * because its key equals new_row's, and an equal key of another image (1.0 and
 * 1.00, or two spellings under a case-insensitive index) is never written.
 */
static Bitmapset *
compared_columns(UpsertPlan *plan)
{
	return bms_difference(plan->present, plan->keys);
}

/*
 * "record_image_eq(ROW(t.a, t.b), ROW(<a>, <b>))": the stored row holds exactly
 * these values, by image equality, in the compared columns.  other is a row
 * alias such as EXCLUDED, or NULL for the parameters.
 *
 * Written for Citus too, which deparses the statements it sends to a shard: the
 * function rather than the operator *=, as a deparsed "ROW(...)::record *=
 * ROW(...)" loses its cast and parses back as a column-by-column comparison; and
 * the parameters' row starts with the first key column on both sides, as a row
 * of parameters alone is folded into a constant of type record, which no shard
 * can read back.  The key column is the same on both sides: the row was found by
 * it.
 */
static void
append_same_row(StringInfo sql, UpsertPlan *plan, const char *other)
{
	Bitmapset  *compared = compared_columns(plan);
	const char *anchor = NULL;

	if (other == NULL)
		anchor = shape_column_name(plan->rel, bms_next_member(plan->keys, -1));
	appendStringInfoString(sql, "pg_catalog.record_image_eq(ROW(");
	if (anchor)
		appendStringInfo(sql, "t.%s%s", anchor, bms_is_empty(compared) ? "" : ", ");
	shape_append_columns(sql, plan->rel, compared, "t");
	appendStringInfoString(sql, "), ROW(");
	if (anchor)
		appendStringInfo(sql, "t.%s%s", anchor, bms_is_empty(compared) ? "" : ", ");
	if (other != NULL)
		shape_append_columns(sql, plan->rel, compared, other);
	else
		shape_append_params(sql, compared, plan->params);
	appendStringInfoString(sql, "))");
}

/* "(t.v IS NULL OR t.v < <v>)": the new version wins; a stored NULL always loses. */
static void
append_newer_version(StringInfo sql, UpsertPlan *plan, const char *other)
{
	const char *v = shape_column_name(plan->rel, plan->version);
	const char *lt = shape_less_than(plan->rel, plan->version);

	if (other != NULL)
		appendStringInfo(sql, "(t.%s IS NULL OR t.%s %s %s.%s)", v, v, lt, other, v);
	else
		appendStringInfo(sql, "(t.%s IS NULL OR t.%s %s $%d)", v, v, lt,
						 plan->params[plan->version]);
}

/*
 * Read the stored row: one row of (same, stale) when the key exists.  A stored
 * NULL version is older than any version.
 */
static char *
probe_sql(UpsertPlan *plan)
{
	StringInfoData sql;

	initStringInfo(&sql);
	appendStringInfoString(&sql, "SELECT ");
	append_same_row(&sql, plan, NULL);
	if (plan->version != InvalidAttrNumber)
	{
		appendStringInfoString(&sql, ", NOT ");
		append_newer_version(&sql, plan, NULL);
	}
	appendStringInfo(&sql, " FROM %s AS t WHERE ", plan->target);
	shape_append_key_match(&sql, plan->keyindex, "t", plan->params);
	return sql.data;
}

/* Insert, or update when different (and newer); RETURNING tells insert from update. */
static char *
write_sql(UpsertPlan *plan)
{
	StringInfoData sql;
	Bitmapset  *updated = bms_difference(plan->present, plan->keys);
	int			attnum = -1;
	bool		first = true;

	initStringInfo(&sql);
	appendStringInfo(&sql, "INSERT INTO %s AS t (", plan->qualname);
	shape_append_columns(&sql, plan->rel, plan->present, NULL);
	appendStringInfoString(&sql, ") VALUES (");
	shape_append_params(&sql, plan->present, plan->params);
	appendStringInfoString(&sql, ") ON CONFLICT (");
	shape_append_columns(&sql, plan->rel, plan->keys, NULL);
	appendStringInfoString(&sql, ") ");

	if (bms_is_empty(updated))
		appendStringInfoString(&sql, "DO NOTHING");
	else
	{
		appendStringInfoString(&sql, "DO UPDATE SET ");
		while ((attnum = bms_next_member(updated, attnum)) >= 0)
		{
			const char *c = shape_column_name(plan->rel, attnum);

			appendStringInfo(&sql, "%s%s = EXCLUDED.%s", first ? "" : ", ", c, c);
			first = false;
		}
		appendStringInfoString(&sql, " WHERE NOT (");
		append_same_row(&sql, plan, "EXCLUDED");
		appendStringInfoString(&sql, ")");
		if (plan->version != InvalidAttrNumber)
		{
			appendStringInfoString(&sql, " AND ");
			append_newer_version(&sql, plan, "EXCLUDED");
		}
	}
	appendStringInfoString(&sql, " RETURNING t.xmax::pg_catalog.text OPERATOR(pg_catalog.=) '0'");
	return sql.data;
}

/*
 * Update a row known to exist, when it differs (and is older).  A plain UPDATE
 * rather than INSERT ... ON CONFLICT: it does not check NOT NULL columns that
 * new_row leaves out against a row that is never inserted, and costs less.
 */
static char *
update_sql(UpsertPlan *plan)
{
	StringInfoData sql;
	Bitmapset  *updated = bms_difference(plan->present, plan->keys);
	int			attnum = -1;
	bool		first = true;

	if (bms_is_empty(updated))
		return NULL;
	initStringInfo(&sql);
	appendStringInfo(&sql, "UPDATE %s AS t SET ", plan->target);
	while ((attnum = bms_next_member(updated, attnum)) >= 0)
	{
		appendStringInfo(&sql, "%s%s = $%d", first ? "" : ", ",
						 shape_column_name(plan->rel, attnum), plan->params[attnum]);
		first = false;
	}
	appendStringInfoString(&sql, " WHERE ");
	shape_append_key_match(&sql, plan->keyindex, "t", plan->params);
	appendStringInfoString(&sql, " AND NOT (");
	append_same_row(&sql, plan, NULL);
	appendStringInfoString(&sql, ")");
	if (plan->version != InvalidAttrNumber)
	{
		appendStringInfoString(&sql, " AND ");
		append_newer_version(&sql, plan, NULL);
	}
	/* No RETURNING: the count of rows updated is the answer. */
	return sql.data;
}

/* Insert if new, else nothing: no lock, no WAL, no row version on a conflict. */
static char *
insert_first_sql(UpsertPlan *plan)
{
	StringInfoData sql;

	initStringInfo(&sql);
	appendStringInfo(&sql, "INSERT INTO %s AS t (", plan->qualname);
	shape_append_columns(&sql, plan->rel, plan->present, NULL);
	appendStringInfoString(&sql, ") VALUES (");
	shape_append_params(&sql, plan->present, plan->params);
	appendStringInfoString(&sql, ") ON CONFLICT (");
	shape_append_columns(&sql, plan->rel, plan->keys, NULL);
	appendStringInfoString(&sql, ") DO NOTHING");
	return sql.data;
}

/*
 * The row's values as typed parameters, one per column it names; a jsonb object's
 * converted first (upsert_row's are in plan->row already).
 */
static void
bind_row(UpsertPlan *plan, Jsonb *row)
{
	int			natts = RelationGetDescr(plan->rel)->natts;
	int			n = bms_num_members(plan->present);

	if (row != NULL)
	{
		plan->row = palloc(sizeof(Datum) * natts);
		plan->rownulls = palloc(sizeof(bool) * natts);
		row_values_from_jsonb(plan->rel, row, plan->row, plan->rownulls);
	}
	plan->params = palloc0(sizeof(int) * (natts + 1));
	plan->types = palloc(sizeof(Oid) * n);
	plan->values = palloc(sizeof(Datum) * n);
	plan->nulls = palloc(sizeof(char) * n);
	plan->nparams = shape_bind_columns(plan->rel, plan->present, 1, plan->params, plan->types,
									   plan->values, plan->nulls, plan->row, plan->rownulls);
}

static bool
result_bool(int column)
{
	bool		isnull;
	Datum		value = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, column, &isnull);

	return !isnull && DatumGetBool(value);
}

/* Is the stored version newer than or equal to new_row's? */
static bool
stored_is_newer(UpsertPlan *plan, Datum stored)
{
	Form_pg_attribute att = TupleDescAttr(RelationGetDescr(plan->rel), plan->version - 1);
	TypeCacheEntry *type = lookup_type_cache(att->atttypid, TYPECACHE_LT_OPR);

	return !DatumGetBool(OidFunctionCall2Coll(get_opcode(type->lt_opr), att->attcollation,
											  stored, plan->row[plan->version - 1]));
}

/*
 * The same decision as probe_sql, from the index alone: "stale", "unchanged", or
 * NULL when the row is missing or differs and must be written.
 */
static const char *
decide_stale_or_unchanged(UpsertPlan *plan, bool *exists)
{
	TupleDesc	desc = RelationGetDescr(plan->rel);
	Datum	   *stored = palloc(sizeof(Datum) * desc->natts);
	bool	   *storednulls = palloc(sizeof(bool) * desc->natts);
	Bitmapset  *compared;
	int			attnum = -1;

	*exists = direct_access_fetch(plan->rel, plan->keyindex, plan->row, plan->rownulls, stored,
								  storednulls, &plan->tid);
	plan->read_cid = GetCurrentCommandId(false);
	plan->stored = stored;
	plan->storednulls = storednulls;
	if (!*exists)
		return NULL;

	if (plan->version != InvalidAttrNumber && !storednulls[plan->version - 1] &&
		stored_is_newer(plan, stored[plan->version - 1]))
		return "stale";

	compared = compared_columns(plan);
	while ((attnum = bms_next_member(compared, attnum)) >= 0)
	{
		Form_pg_attribute att = TupleDescAttr(desc, attnum - 1);
		bool		a_null = storednulls[attnum - 1];
		bool		b_null = plan->rownulls[attnum - 1];

		if (a_null != b_null ||
			(!a_null && !datum_image_eq(stored[attnum - 1], plan->row[attnum - 1],
										att->attbyval, att->attlen)))
			return NULL;
	}
	return "unchanged";
}

/*
 * Three orders of the same steps, each cheapest for one kind of traffic, chosen
 * from what recent calls through the same shape did:
 *	read first		one index lookup decides a replay, which then writes nothing;
 *					the default, and what redelivery-heavy traffic wants
 *	insert first	INSERT ... ON CONFLICT DO NOTHING, for mostly new rows; on a
 *					conflict the statement that settles every race follows
 *	update first	the guarded UPDATE, for mostly changed rows: its WHERE fails on
 *					a replay, so it too writes and fires nothing, and we read after;
 *					not taken when the row can be changed in place, which makes
 *					reading first as cheap
 * Every order gives the same answers.  Insert first is not taken when the table
 * has INSERT triggers, nor update first when it has statement-level UPDATE
 * triggers: they fire on the attempt, and a replay must fire none; nor insert
 * first for a row that leaves out a column without a default, which the INSERT
 * would refuse where the row exists.
 * idempotent_inbox.force_path forces an order (adaptive.h).
 */
#define FRESH_FIRST_THRESHOLD SHARE_THRESHOLD_HALF
#define UPDATE_FIRST_THRESHOLD SHARE_THRESHOLD_HALF

static bool
has_insert_triggers(Relation rel)
{
	TriggerDesc *trig = rel->trigdesc;

	return trig != NULL &&
		(trig->trig_insert_before_row || trig->trig_insert_after_row ||
		 trig->trig_insert_instead_row || trig->trig_insert_before_statement ||
		 trig->trig_insert_after_statement);
}

/*
 * "stale", "unchanged", or NULL when the row is missing or differs; *exists says
 * which of the two.
 */
static const char *
decide_without_writing(UpsertPlan *plan, const ShapeStatements *sql, bool *exists)
{
	StatementPlan *statement;

	if (plan->read_direct)
		return decide_stale_or_unchanged(plan, exists);

	/* The caller may not read the table directly: let SELECT check and filter. */
	statement = statement_cache_get(sql->sql[0], plan->nparams, plan->types);
	statement_cache_execute(statement, plan->values, plan->nulls);
	*exists = SPI_processed == 1;
	if (SPI_processed == 1 && plan->version != InvalidAttrNumber && result_bool(2))
		return "stale";
	if (SPI_processed == 1 && result_bool(1))
		return "unchanged";
	return NULL;
}

/*
 * Under row security the conflicting row that ON CONFLICT found may be one the
 * policies hide from the caller: ON CONFLICT's WHERE judges it before the policies
 * do.  Whether a hidden row holds these values is not the caller's to learn, so
 * look again through the policies; a row still unseen is refused, as core refuses
 * an update of a row the UPDATE policies exclude.
 */
static void
CheckConflictVisible(UpsertPlan *plan, const ShapeStatements *sql)
{
	StatementPlan *statement;

	if (!plan->rls)
		return;
	statement = statement_cache_get(sql->sql[0], plan->nparams, plan->types);
	statement_cache_execute(statement, plan->values, plan->nulls);
	if (SPI_processed == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("new row conflicts with a row of \"%s\" that row-level security hides",
						RelationGetRelationName(plan->rel)),
				 errdetail("The row with this key is not visible to the current user.")));
}

static const char *
write_row(UpsertPlan *plan, const ShapeStatements *sql)
{
	StatementPlan *statement = statement_cache_get(sql->sql[1], plan->nparams, plan->types);

	statement_cache_execute(statement, plan->values, plan->nulls);
	if (SPI_processed == 1)
		return result_bool(1) ? "inserted" : "updated";
	/* Another session wrote the same row (or a newer version) meanwhile. */
	CheckConflictVisible(plan, sql);
	return plan->version != InvalidAttrNumber ? "stale" : "unchanged";
}

/* "updated", or NULL when the row went or changed since it was read. */
static const char *
update_existing(UpsertPlan *plan, const ShapeStatements *sql)
{
	StatementPlan *statement;

	if (sql->sql[3] == NULL)
		return NULL;
	statement = statement_cache_get(sql->sql[3], plan->nparams, plan->types);
	statement_cache_execute(statement, plan->values, plan->nulls);
	return SPI_processed == 1 ? "updated" : NULL;
}

/*
 * "updated" by writing the changed row that decide_stale_or_unchanged read in
 * place, as the guarded UPDATE would: the columns new_row names take its values,
 * the key and the columns it leaves out keep theirs.  NULL when the SQL path must
 * settle it: the row changed meanwhile, or the new row breaks a constraint whose
 * error the statement raises.
 */
static const char *
update_in_place(UpsertPlan *plan)
{
	int			natts = RelationGetDescr(plan->rel)->natts;
	Bitmapset  *updated = bms_difference(plan->present, plan->keys);
	Datum	   *values;
	bool	   *nulls;
	int			attnum = -1;

	if (bms_is_empty(updated))
		return NULL;
	values = palloc(sizeof(Datum) * natts);
	nulls = palloc(sizeof(bool) * natts);
	memcpy(values, plan->stored, sizeof(Datum) * natts);
	memcpy(nulls, plan->storednulls, sizeof(bool) * natts);
	while ((attnum = bms_next_member(updated, attnum)) >= 0)
	{
		values[attnum - 1] = plan->row[attnum - 1];
		nulls[attnum - 1] = plan->rownulls[attnum - 1];
	}
	return direct_access_update_row(plan->rel, natts, &plan->tid, plan->read_cid, values, nulls) ?
		"updated" : NULL;
}

/*
 * Whether new_row names every NOT NULL column without a default: an INSERT of a row
 * that leaves out a NOT NULL column fails even where the row exists and the
 * other orders would update it, so such a call never tries the INSERT first.
 */
static bool
names_required_columns(UpsertPlan *plan)
{
	TupleDesc	desc = RelationGetDescr(plan->rel);

	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		if (att->attisdropped || !att->attnotnull || att->atthasdef || att->attidentity ||
			att->attgenerated)
			continue;
		if (!bms_is_member(att->attnum, plan->present))
			return false;
	}
	return true;
}

static bool
insert_goes_first(UpsertPlan *plan, const ShapeStatements *sql)
{
	return adaptive_goes_first(sql->fresh_rate >= FRESH_FIRST_THRESHOLD, STEP_INSERT) &&
		!has_insert_triggers(plan->rel) && names_required_columns(plan);
}

/* Row-level UPDATE triggers fire only for rows the WHERE lets through. */
static bool
has_update_statement_triggers(Relation rel)
{
	TriggerDesc *trig = rel->trigdesc;

	return trig != NULL &&
		(trig->trig_update_before_statement || trig->trig_update_after_statement);
}

/*
 * INSERT ... ON CONFLICT DO NOTHING without the executor: the columns new_row
 * names take its values, the others are NULL (direct_access_possible checked
 * that they may be).
 */
static DirectWrite
insert_directly(UpsertPlan *plan, const ShapeStatements *sql)
{
	int			natts = RelationGetDescr(plan->rel)->natts;
	Datum	   *values = palloc0(sizeof(Datum) * natts);
	bool	   *nulls = palloc(sizeof(bool) * natts);
	int			attnum = -1;

	memset(nulls, true, sizeof(bool) * natts);
	while ((attnum = bms_next_member(plan->present, attnum)) >= 0)
	{
		values[attnum - 1] = plan->row[attnum - 1];
		nulls[attnum - 1] = plan->rownulls[attnum - 1];
	}
	/* Where another index could refuse the row, look as the statement does. */
	return direct_access_insert_row(plan->rel, plan->keyindex, natts, values, nulls,
									!sql->insert_first_safe);
}

/* INSERT ... ON CONFLICT DO NOTHING: did it insert? */
static bool
insert_new(UpsertPlan *plan, const ShapeStatements *sql)
{
	StatementPlan *statement;

	if (plan->insert_direct)
	{
		DirectWrite done = insert_directly(plan, sql);

		if (done != DIRECT_UNAVAILABLE)
			return done == DIRECT_INSERTED;
	}
	statement = statement_cache_get(sql->sql[2], plan->nparams, plan->types);
	statement_cache_execute(statement, plan->values, plan->nulls);
	return SPI_processed == 1;
}

/*
 * write_row for a partitioned table, whose rows the executor routes to partitions
 * and where RETURNING cannot read xmax to tell an insert from an update (nor may a
 * caller with column privileges only read that system column): insert if
 * new, else update if different, else read why neither wrote.  Each step settles
 * unless another session deleted or changed the row in between; then go round
 * again, as ON CONFLICT itself does.
 */
/*
 * Rounds before giving the answer write_row gives when its statement wrote
 * nothing: a row that is not there after an INSERT that did not insert was
 * deleted meanwhile, or the INSERT was skipped by a BEFORE trigger returning NULL.
 */
#define ROUTED_ATTEMPTS 3

static const char *
write_row_routed(UpsertPlan *plan, const ShapeStatements *sql)
{
	for (int attempt = 0; attempt < ROUTED_ATTEMPTS; attempt++)
	{
		StatementPlan *statement;
		const char *outcome;

		CHECK_FOR_INTERRUPTS();
		if (insert_new(plan, sql))
			return "inserted";
		outcome = update_existing(plan, sql);
		if (outcome != NULL)
			return outcome;

		statement = statement_cache_get(sql->sql[0], plan->nparams, plan->types);
		statement_cache_execute(statement, plan->values, plan->nulls);
		if (SPI_processed == 1)
		{
			if (plan->version != InvalidAttrNumber && result_bool(2))
				return "stale";
			/* Only key columns: nothing to update, the row is there. */
			if (result_bool(1) || sql->sql[3] == NULL)
				return plan->version != InvalidAttrNumber ? "stale" : "unchanged";
		}
		else if (plan->rls)
			CheckConflictVisible(plan, sql);
	}
	return plan->version != InvalidAttrNumber ? "stale" : "unchanged";
}

static const char *
run_upsert(UpsertPlan *plan, const ShapeStatements *sql)
{
	const char *outcome = NULL;

	/*
	 * INSERT ... ON CONFLICT DO UPDATE is refused up front on a table published
	 * without the replica identity its updates need, whatever the row; so is
	 * every call, whichever order would have answered it.
	 */
	if (!plan->routed)
		CheckCmdReplicaIdentity(plan->rel, CMD_UPDATE);
	spi_connect();
	if (insert_goes_first(plan, sql))
	{
		/*
		 * A conflict may have made the INSERT wait for another writer of the
		 * row: settle it as a race is settled on the other orders, with the
		 * statement that locks the row it answers from, so that an unchanged
		 * answer holds the row as ON CONFLICT DO UPDATE does.
		 */
		if (insert_new(plan, sql))
			outcome = "inserted";
		else
			outcome = plan->routed ? write_row_routed(plan, sql) : write_row(plan, sql);
	}
	else if (adaptive_goes_first(sql->update_rate >= UPDATE_FIRST_THRESHOLD && !plan->in_place,
								 STEP_UPDATE) &&
			 !has_update_statement_triggers(plan->rel))
		outcome = update_existing(plan, sql);

	if (outcome == NULL)
	{
		bool		exists = false;

		outcome = decide_without_writing(plan, sql, &exists);
		if (outcome == NULL && exists && plan->in_place)
			outcome = update_in_place(plan);
		if (outcome == NULL && exists)
			outcome = update_existing(plan, sql);
		if (outcome == NULL && !exists && plan->insert_direct &&
			insert_directly(plan, sql) == DIRECT_INSERTED)
			outcome = "inserted";
		/* Missing, or changed meanwhile: the statement that settles every race. */
		if (outcome == NULL)
			outcome = plan->routed ? write_row_routed(plan, sql) : write_row(plan, sql);
	}
	SPI_finish();

	shape_cache_record(plan->rel, SHAPE_UPSERT, plan->present, plan->requested, plan->version,
					   strcmp(outcome, "inserted") == 0, strcmp(outcome, "updated") == 0);
	return outcome;
}

/*
 * Rights, before any row is read: SELECT on every column named (ON CONFLICT's
 * WHERE and the probe read them all), INSERT on them, UPDATE on those it may change.
 */
#define UPSERT_RIGHTS (ACL_SELECT | ACL_INSERT | ACL_UPDATE)

static void
CheckUpsertColumns(UpsertPlan *plan, AclMode held)
{
	Bitmapset  *read = bms_union(plan->present, plan->keys);

	if (plan->version != InvalidAttrNumber)
		read = bms_add_member(read, plan->version);
	shape_check_columns(plan->rel, ACL_SELECT, held, read);
	shape_check_columns(plan->rel, ACL_INSERT, held, plan->present);
	shape_check_columns(plan->rel, ACL_UPDATE, held, bms_difference(plan->present, plan->keys));
}

/* A whole row's columns: all but the dropped and the generated ones. */
static Bitmapset *
whole_row_columns(Relation rel)
{
	TupleDesc	desc = RelationGetDescr(rel);
	Bitmapset  *columns = NULL;

	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		if (!att->attisdropped && !att->attgenerated)
			columns = bms_add_member(columns, att->attnum);
	}
	return columns;
}

/* May a new row of exactly the columns new_row names be inserted directly? */
static bool
direct_insert_possible(UpsertPlan *plan)
{
	AttrNumber *filled = palloc(sizeof(AttrNumber) * Max(bms_num_members(plan->present), 1));
	int			nfilled = 0;
	int			attnum = -1;

	while ((attnum = bms_next_member(plan->present, attnum)) >= 0)
		filled[nfilled++] = attnum;
	return direct_access_possible(plan->rel, filled, nfilled) &&
		direct_access_sole_arbiter(plan->rel, plan->keyindex);
}

/*
 * key and version_column are arguments keyarg and keyarg + 1.  The new row is
 * either a jsonb object (row), converted once the rights are checked, or, for
 * upsert_row, values by attribute number already taken out of a row of the table's
 * type (values, nulls), of which every column but the generated ones, which no one
 * may set, is present.
 */
static Datum
upsert_common(FunctionCallInfo fcinfo, Relation rel, AclMode held, Jsonb *row,
			  Datum *values, bool *nulls, int keyarg)
{
	UpsertPlan	plan;
	Bitmapset  *requested = key_argument(fcinfo, keyarg, rel);
	ShapeStatements built = {0};
	ShapeStatements *sql;
	const char *outcome;

	plan.rel = rel;
	plan.requested = requested;
	plan.row = values;
	plan.rownulls = nulls;
	plan.present = row != NULL ? shape_jsonb_columns(rel, row) : whole_row_columns(rel);
	plan.version = PG_ARGISNULL(keyarg + 1) ? InvalidAttrNumber :
		shape_column(rel, text_to_cstring(PG_GETARG_TEXT_PP(keyarg + 1)));
	plan.rls = check_enable_rls(RelationGetRelid(rel), InvalidOid, true) == RLS_ENABLED;
	/* RETURNING xmax needs a plain table and SELECT on all of it (a system column). */
	plan.routed = rel->rd_rel->relkind != RELKIND_RELATION || !(held & ACL_SELECT);
	shape_check_assignable(rel, plan.present, true);

	sql = shape_cache_lookup(rel, SHAPE_UPSERT, plan.present, requested, plan.version);
	if (sql != NULL)
	{
		plan.keyindex = sql->keyindex;
		plan.keys = sql->keys;
		CheckRowHasKey(&plan);
		CheckUpsertColumns(&plan, held);
		CheckRowHasVersion(&plan, row);
		bind_row(&plan, row);
	}
	else
	{
		plan.keyindex = built.keyindex = shape_unique_key(rel, requested);
		plan.keys = built.keys = shape_index_columns(plan.keyindex);
		CheckRowHasKey(&plan);
		CheckUpsertColumns(&plan, held);
		CheckRowHasVersion(&plan, row);
		bind_row(&plan, row);
		plan.qualname = shape_qualname(rel);
		plan.target = shape_target(rel);
		built.sql[0] = probe_sql(&plan);
		built.sql[1] = write_sql(&plan);
		built.sql[2] = insert_first_sql(&plan);
		built.sql[3] = update_sql(&plan);
		built.direct_update = direct_access_update_possible(rel);
		built.direct_insert = direct_insert_possible(&plan);
		built.insert_first_safe = direct_access_insert_first_safe(rel, plan.keyindex);
		shape_cache_store(rel, SHAPE_UPSERT, plan.present, requested, plan.version, &built);
		sql = &built;
	}

	plan.read_direct = direct_access_fetch_allowed(rel);
	plan.in_place = plan.read_direct && sql->direct_update && !plan.routed &&
		direct_access_allowed(RelationGetRelid(rel));
	plan.insert_direct = (sql->direct_insert && !plan.routed && !plan.rls &&
						  (plan.in_place || direct_access_allowed(RelationGetRelid(rel))));
	outcome = run_upsert(&plan, sql);
	table_close(rel, NoLock);

	PG_RETURN_DATUM(signature_enum_label(signature_of_call(fcinfo)->rettype, outcome));
}

PG_FUNCTION_INFO_V1(inbox_upsert);
Datum
inbox_upsert(PG_FUNCTION_ARGS)
{
	AclMode		held;
	Relation	rel = shape_open(fcinfo, 0, UPSERT_RIGHTS, false, RowExclusiveLock, &held);
	Jsonb	   *row = shape_jsonb_arg(fcinfo, 1, "new_row", "{\"id\": 1, \"status\": \"PAID\"}");

	return upsert_common(fcinfo, rel, held, row, NULL, NULL, 2);
}

/*
 * The values of a row of rel's own type, by attribute number - 1.  A row built
 * before a column was added has fewer attributes: the rest read as NULL, as they
 * would through the jsonb form, where the object does not name them.
 */
static void
row_values_from_row(Relation rel, Datum row, Datum **values, bool **nulls)
{
	HeapTupleHeader header = DatumGetHeapTupleHeader(row);
	TupleDesc	desc = RelationGetDescr(rel);
	HeapTupleData tuple;

	tuple.t_len = HeapTupleHeaderGetDatumLength(header);
	ItemPointerSetInvalid(&tuple.t_self);
	tuple.t_tableOid = InvalidOid;
	tuple.t_data = header;
	*values = palloc(sizeof(Datum) * desc->natts);
	*nulls = palloc(sizeof(bool) * desc->natts);
	heap_deform_tuple(&tuple, desc, *values, *nulls);
}

/*
 * upsert_row(new_row, key, version_column): the target is the table whose row type
 * new_row has.  (An overload of upsert taking a row would make every call with an
 * untyped jsonb literal ambiguous, hence the name.)
 */
PG_FUNCTION_INFO_V1(inbox_upsert_row);
Datum
inbox_upsert_row(PG_FUNCTION_ARGS)
{
	Oid			rowtype = get_fn_expr_argtype(fcinfo->flinfo, 0);
	Oid			relid = OidIsValid(rowtype) ? get_typ_typrelid(rowtype) : InvalidOid;
	AclMode		held;
	Relation	rel;
	Datum	   *values;
	bool	   *nulls;

	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("new_row must not be null")));
	if (!OidIsValid(relid))
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("new_row must be a row of a table, not of type %s",
						OidIsValid(rowtype) ? format_type_be(rowtype) : "unknown"),
				 errhint("Write it as a row of the table's type, such as ROW(...)::payments.")));

	rel = shape_open_relid(relid, UPSERT_RIGHTS, false, RowExclusiveLock, &held);
	row_values_from_row(rel, PG_GETARG_DATUM(0), &values, &nulls);
	return upsert_common(fcinfo, rel, held, NULL, values, nulls, 1);
}
