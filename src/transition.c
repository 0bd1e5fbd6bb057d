/*
 * transition.c
 *		inbox.transition: an absolute state change guarded by the current state, so
 *		that a redelivered "move to PAID" is a harmless replay.  The row is named by
 *		a jsonb object of key columns (transition), or by the value of the table's
 *		one-column primary key (transition_key); both share everything after that.
 *
 * Outcomes:
 *	moved		the row was in one of from_states and is now in to_state
 *	already		the row is already in to_state (an idempotent replay; no write)
 *	rejected	the row is in a state not listed
 *	missing		no row has the key
 *
 * The stored row is read from the index first (direct_access.c), so a replay, a
 * refusal or a missing row is answered without any statement, and where the
 * table allows it the move is written in place, without one either.  Otherwise
 * one guarded UPDATE does the move, with the key's values (converted as
 * jsonb_populate_record would) as typed parameters; when it matches nothing,
 * because another session moved the row meanwhile, a second read says why.  Under READ COMMITTED, sessions racing to move one row queue on its row
 * lock; the losers re-check the state after the winner commits, find to_state, and
 * answer already.  Under REPEATABLE READ and SERIALIZABLE they get 40001.
 *
 * Without from_states the allowed sources come from the state machine that
 * guard_transitions installed on the column.
 *
 * States compare by their text form as values of the column's type
 * (shape_state_text): to_state and from_states are read by the type's input
 * function first, so the direct read, the guarded UPDATE and the machine's trigger
 * agree on boolean, char(n), numeric and every other type.
 */
#include "postgres.h"

#include "access/table.h"
#include "access/xact.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "executor/executor.h"
#include "executor/spi.h"
#include "nodes/makefuncs.h"
#include "optimizer/optimizer.h"
#include "parser/parse_coerce.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

#include "adaptive.h"
#include "compat.h"
#include "inbox.h"
#include "direct_access.h"
#include "row_values.h"
#include "shape_cache.h"
#include "signature.h"
#include "spi_util.h"
#include "state_machine.h"
#include "statement_cache.h"
#include "table_shape.h"

/* Share of recent calls that moved their row above which the UPDATE goes first. */
#define MOVED_FIRST_THRESHOLD SHARE_THRESHOLD_HALF

/* The key names a row by exactly the columns of a unique constraint. */
static Bitmapset *
key_columns(Relation rel, Jsonb *key)
{
	Bitmapset  *columns = shape_jsonb_columns(rel, key);

	if (columns == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("key must name the columns of a primary key or unique constraint"),
				 errhint("Pass an object such as '{\"id\": 1}'.")));
	return columns;
}

static char *
text_arg(FunctionCallInfo fcinfo, int argno, const char *argname)
{
	if (PG_ARGISNULL(argno))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("%s must not be null", argname)));
	return text_to_cstring(PG_GETARG_TEXT_PP(argno));
}

/* from_states in their text forms as states of the column (shape_state_text). */
static ArrayType *
given_sources(Relation rel, AttrNumber attnum, ArrayType *given)
{
	Datum	   *elems;
	bool	   *nulls;
	int			n;

	deconstruct_array(given, TEXTOID, -1, false, TYPALIGN_INT, &elems, &nulls, &n);
	for (int i = 0; i < n; i++)
	{
		if (nulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("from_states must not contain nulls")));
		elems[i] = CStringGetTextDatum(shape_state_text(rel, attnum, TextDatumGetCString(elems[i]),
														NULL));
	}
	return construct_array(elems, n, TEXTOID, -1, false, TYPALIGN_INT);
}

/* from_states as given, or from the column's state machine. */
static ArrayType *
source_states(FunctionCallInfo fcinfo, int argno, Relation rel, AttrNumber attnum,
			  const char *column, const char *to_state)
{
	ArrayType  *sources;

	if (argno >= 0 && !PG_ARGISNULL(argno))
		return given_sources(rel, attnum, PG_GETARG_ARRAYTYPE_P(argno));

	sources = state_machine_sources(rel, column, to_state, get_func_namespace(fcinfo->flinfo->fn_oid));
	if (sources == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("from_states must not be null: column %s of \"%s\" has no state machine",
						quote_identifier(column), RelationGetRelationName(rel)),
				 errhint("Pass the states the row may move from, or install a machine with inbox.guard_transitions().")));
	return sources;
}

/*
 * "stored" and "given": SQL for the text forms of the stored state and of the
 * new one ($k+1), compared bytewise, as strcmp does in the direct read.  A text
 * or varchar value is its own text form, which spares every move two output
 * calls.  Otherwise the form is the type's output function, called by name where
 * it is immutable: Citus refuses an UPDATE on a distributed table whose WHERE
 * calls a STABLE function on a column, and format('%s', v), the general form,
 * is STABLE.  Where the output function is not immutable either (the text form
 * depends on a setting, as a timestamptz's does) it is format, and Citus refuses.
 */
static void
state_text_forms(const char *column, Oid type, int given_param, char **stored, char **given)
{
	Oid			output;
	bool		varlena;
	char	   *fn;

	if (type == TEXTOID || type == VARCHAROID)
	{
		*stored = psprintf("t.%s::pg_catalog.text", column);
		*given = psprintf("$%d::pg_catalog.text", given_param);
		return;
	}
	getTypeOutputInfo(type, &output, &varlena);
	if (func_volatile(output) != PROVOLATILE_IMMUTABLE)
	{
		*stored = psprintf("pg_catalog.format('%%s', t.%s)", column);
		*given = psprintf("pg_catalog.format('%%s', $%d)", given_param);
		return;
	}
	fn = quote_qualified_identifier(get_namespace_name(get_func_namespace(output)),
									get_func_name(output));
	*stored = psprintf("pg_catalog.textin(%s(t.%s))", fn, column);
	*given = psprintf("pg_catalog.textin(%s($%d))", fn, given_param);
}

/*
 * The key columns are $1..$k; the new state is $k+1, the sources (text forms)
 * $k+2.  An enum's output function is STABLE (it reads the catalog), but its
 * labels are its text forms, one to a value: it is compared as a value of the
 * type, the sources cast to it (each was read by the type's input function
 * already, so the cast cannot fail), which Citus accepts.  No RETURNING: the
 * count of rows updated says whether the row moved.
 */
static char *
move_sql(const char *target, const char *column, Oid type, Oid keyindex, const int *params,
		 int nkeys)
{
	StringInfoData sql;

	initStringInfo(&sql);
	appendStringInfo(&sql, "UPDATE %s AS t SET %s = $%d WHERE ", target, column, nkeys + 1);
	shape_append_key_match(&sql, keyindex, "t", params);
	/* Already there is a replay even when from_states lists to_state too. */
	if (type_is_enum(type))
		appendStringInfo(&sql,
						 " AND t.%s OPERATOR(pg_catalog.=) ANY ($%d::%s)"
						 " AND t.%s OPERATOR(pg_catalog.<>) $%d",
						 column, nkeys + 2, format_type_be_qualified(get_array_type(type)),
						 column, nkeys + 1);
	else
	{
		char	   *stored;
		char	   *given;

		state_text_forms(column, type, nkeys + 1, &stored, &given);
		appendStringInfo(&sql,
						 " AND t.%s IS NOT NULL"
						 " AND %s COLLATE pg_catalog.\"C\" OPERATOR(pg_catalog.=) ANY ($%d)"
						 " AND %s COLLATE pg_catalog.\"C\" OPERATOR(pg_catalog.<>) %s",
						 column, stored, nkeys + 2, stored, given);
	}
	return sql.data;
}

/* The stored state, for SPI_getvalue: its text form, as the direct read has it. */
static char *
look_sql(const char *target, const char *column, Oid keyindex, const int *params)
{
	StringInfoData sql;

	initStringInfo(&sql);
	appendStringInfo(&sql, "SELECT t.%s FROM %s AS t WHERE ", column, target);
	shape_append_key_match(&sql, keyindex, "t", params);
	return sql.data;
}

static bool
state_listed(ArrayType *sources, const char *state)
{
	Datum	   *elems;
	bool	   *nulls;
	int			n;

	deconstruct_array(sources, TEXTOID, -1, false, TYPALIGN_INT, &elems, &nulls, &n);
	for (int i = 0; i < n; i++)
		if (!nulls[i] && strcmp(TextDatumGetCString(elems[i]), state) == 0)
			return true;
	return false;
}

/*
 * The stored row as read from the index, and where it is: what a move in place
 * starts from.
 */
typedef struct StoredRow
{
	int			natts;
	Datum	   *values;
	bool	   *nulls;
	ItemPointerData tid;
	CommandId	read_cid;		/* the command it was read in */
} StoredRow;

/*
 * The outcome when the stored row alone decides it (missing, already, rejected),
 * read from the index into stored; NULL when the row may move and the guarded
 * UPDATE must run.
 */
static const char *
decide_missing_already_or_rejected(Relation rel, Oid keyindex, AttrNumber attnum, const Datum *row,
								   const bool *rownulls, ArrayType *sources, const char *to_state,
								   StoredRow *stored)
{
	char	   *current;

	stored->natts = RelationGetDescr(rel)->natts;
	stored->values = palloc(sizeof(Datum) * stored->natts);
	stored->nulls = palloc(sizeof(bool) * stored->natts);
	if (!direct_access_fetch(rel, keyindex, row, rownulls, stored->values, stored->nulls,
							 &stored->tid))
		return "missing";
	stored->read_cid = GetCurrentCommandId(false);
	if (stored->nulls[attnum - 1])
		return "rejected";
	current = shape_value_text(rel, attnum, stored->values[attnum - 1]);
	if (strcmp(current, to_state) == 0)
		return "already";
	if (!state_listed(sources, current))
		return "rejected";
	return NULL;
}

/*
 * "moved" by writing the row decide_missing_already_or_rejected read in place,
 * as the guarded UPDATE would; NULL when the SQL path must settle it (the row
 * changed meanwhile, or a constraint's error is due).
 */
static const char *
move_in_place(Relation rel, StoredRow *stored, AttrNumber attnum, Datum to_value)
{
	stored->values[attnum - 1] = to_value;
	stored->nulls[attnum - 1] = false;
	return direct_access_update_row(rel, stored->natts, &stored->tid, stored->read_cid,
									stored->values, stored->nulls) ? "moved" : NULL;
}

/*
 * The guarded UPDATE (sql[0]), and when it moved nothing the look at the row
 * (sql[1]) that says why: missing, already in to_state, or rejected.
 */
static const char *
move_or_look(const ShapeStatements *sql, int nkeys, Oid *types, Datum *values, char *nulls,
			 const char *to_state)
{
	StatementPlan *statement;
	const char *outcome;

	spi_connect();

	statement = statement_cache_get(sql->sql[0], nkeys + 2, types);
	statement_cache_execute(statement, values, nulls);
	if (SPI_processed > 0)
		outcome = "moved";
	else
	{
		/* Lost a race, or may not read the row directly: look why nothing moved. */
		statement = statement_cache_get(sql->sql[1], nkeys, types);
		statement_cache_execute(statement, values, nulls);
		if (SPI_processed == 0)
			outcome = "missing";
		else
		{
			char	   *current = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);

			outcome = (current != NULL && strcmp(current, to_state) == 0) ? "already" : "rejected";
		}
	}
	SPI_finish();
	return outcome;
}

/*
 * The caller needs SELECT and UPDATE, checked before the lock; then SELECT on the
 * key and state columns and UPDATE on the state column, before any row is read.
 */
#define TRANSITION_RIGHTS (ACL_SELECT | ACL_UPDATE)

/*
 * How a form of transition names its row: the key's columns, asked for once the
 * state column and to_state are known to be given, and their values, put into row
 * (by attribute number - 1) once every right is checked, since converting a value
 * may fail and only a caller with the rights may learn anything from how it fails.
 */
typedef struct KeyForm
{
	Bitmapset  *(*columns) (Relation rel, void *arg);
	void		(*values) (Relation rel, Bitmapset *keycols, void *arg, Datum *row,
						   bool *rownulls);
} KeyForm;

/*
 * The statements of a shape not cached yet, kept: the guarded UPDATE and the
 * look at the row, with the key's values at the parameters params gives.
 */
static const ShapeStatements *
transition_statements(Relation rel, Bitmapset *keycols, AttrNumber attnum, Oid keyindex,
					  int *params, int nkeys)
{
	ShapeStatements *built = palloc0(sizeof(ShapeStatements));
	char	   *target = shape_target(rel);
	const char *quoted = shape_column_name(rel, attnum);

	built->keyindex = keyindex;
	built->keys = keycols;
	built->sql[0] = move_sql(target, quoted, shape_column_type(rel, attnum), built->keyindex,
							 params, nkeys);
	built->sql[1] = look_sql(target, quoted, built->keyindex, params);
	built->direct_update = direct_access_update_possible(rel);
	shape_cache_store(rel, SHAPE_TRANSITION, keycols, NULL, attnum, built);
	return built;
}

/*
 * A replay or a refusal needs no statement at all when we may read the row,
 * and a move none either when we may also write it in place.  Without that,
 * while most calls through this shape move their row, the read is an index
 * lookup the UPDATE repeats, so they go to the UPDATE at once.  Every order
 * gives the same answers: the UPDATE writes nothing unless it moves.
 * idempotent_inbox.force_path forces an order (adaptive.h).  NULL when the
 * statements must answer.
 */
static const char *
transition_direct(Relation rel, const ShapeStatements *sql, AttrNumber attnum, Datum *row,
				  bool *rownulls, ArrayType *sources, const char *to_state, Datum to_value)
{
	bool		read_direct = direct_access_fetch_allowed(rel);
	bool		in_place;
	const char *outcome;
	StoredRow	stored;

	in_place = read_direct && sql->direct_update && direct_access_allowed(RelationGetRelid(rel));
	if (!read_direct ||
		adaptive_goes_first(sql->fresh_rate >= MOVED_FIRST_THRESHOLD && !in_place, STEP_WRITE))
		return NULL;
	outcome = decide_missing_already_or_rejected(rel, sql->keyindex, attnum, row, rownulls,
												 sources, to_state, &stored);
	if (outcome == NULL && in_place)
		outcome = move_in_place(rel, &stored, attnum, to_value);
	return outcome;
}

/*
 * Everything after the key's columns are known, for both forms: arguments
 * state_column, [from_states,] to_state are at argno 2, 3 and 3 or 4.
 */
static Datum
transition_common(FunctionCallInfo fcinfo, Relation rel, AclMode held, const KeyForm *form,
				  void *arg)
{
	bool		explicit_sources = PG_NARGS() == 5;
	int			to_arg = explicit_sources ? 4 : 3;
	char	   *column = text_arg(fcinfo, 2, "state_column");
	AttrNumber	attnum = shape_column(rel, column);
	char	   *to_given = text_arg(fcinfo, to_arg, "to_state");
	Bitmapset  *keycols = form->columns(rel, arg);
	Datum		to_value;
	char	   *to_state;
	ArrayType  *sources;
	int			natts = RelationGetDescr(rel)->natts;
	Datum	   *row = palloc(sizeof(Datum) * natts);
	bool	   *rownulls = palloc(sizeof(bool) * natts);
	int		   *params = palloc0(sizeof(int) * (natts + 1));
	int			nkeys = bms_num_members(keycols);
	const ShapeStatements *sql;
	Oid			keyindex;
	Oid		   *types = palloc(sizeof(Oid) * (nkeys + 2));
	Datum	   *values = palloc(sizeof(Datum) * (nkeys + 2));
	char	   *nulls = palloc(sizeof(char) * (nkeys + 2));
	const char *outcome;

	shape_check_assignable(rel, bms_make_singleton(attnum), false);
	shape_check_columns(rel, ACL_SELECT, held, bms_add_member(bms_copy(keycols), attnum));
	shape_check_columns(rel, ACL_UPDATE, held, bms_make_singleton(attnum));

	/*
	 * The statement is an UPDATE, refused up front on a table published
	 * without the replica identity its updates need, whatever the row; so is
	 * every call, however it would have been answered.
	 */
	if (rel->rd_rel->relkind == RELKIND_RELATION)
		CheckCmdReplicaIdentity(rel, CMD_UPDATE);
	to_state = shape_state_text(rel, attnum, to_given, &to_value);
	sources = source_states(fcinfo, explicit_sources ? 3 : -1, rel, attnum, column, to_state);
	sql = shape_cache_lookup(rel, SHAPE_TRANSITION, keycols, NULL, attnum);
	keyindex = sql ? sql->keyindex : shape_unique_key(rel, keycols);

	/* The key's values, then the new state and the allowed sources. */
	form->values(rel, keycols, arg, row, rownulls);
	(void) shape_bind_columns(rel, keycols, 1, params, types, values, nulls, row, rownulls);
	types[nkeys] = shape_column_type(rel, attnum);
	values[nkeys] = to_value;
	nulls[nkeys] = ' ';
	types[nkeys + 1] = TEXTARRAYOID;
	values[nkeys + 1] = PointerGetDatum(sources);
	nulls[nkeys + 1] = ' ';

	if (sql == NULL)
		sql = transition_statements(rel, keycols, attnum, keyindex, params, nkeys);
	outcome = transition_direct(rel, sql, attnum, row, rownulls, sources, to_state, to_value);
	if (outcome == NULL)
		outcome = move_or_look(sql, nkeys, types, values, nulls, to_state);
	shape_cache_record(rel, SHAPE_TRANSITION, keycols, NULL, attnum,
					   strcmp(outcome, "moved") == 0, false);
	table_close(rel, NoLock);

	PG_RETURN_DATUM(signature_enum_label(signature_of_call(fcinfo)->rettype, outcome));
}

/*
 * The jsonb form: the columns the object names, and its values, converted as
 * jsonb_populate_record would.
 */
static Bitmapset *
key_columns_from_jsonb(Relation rel, void *arg)
{
	return key_columns(rel, (Jsonb *) arg);
}

static void
key_values_from_jsonb(Relation rel, Bitmapset *keycols, void *arg, Datum *row, bool *rownulls)
{
	row_values_from_jsonb(rel, (Jsonb *) arg, row, rownulls);
}

static const KeyForm jsonb_key = {key_columns_from_jsonb, key_values_from_jsonb};

PG_FUNCTION_INFO_V1(inbox_transition);
Datum
inbox_transition(PG_FUNCTION_ARGS)
{
	AclMode		held;
	Relation	rel = shape_open(fcinfo, 0, TRANSITION_RIGHTS, false, RowExclusiveLock, &held);
	Jsonb	   *key = shape_jsonb_arg(fcinfo, 1, "key", "{\"id\": 1}");

	return transition_common(fcinfo, rel, held, &jsonb_key, key);
}

/* transition_key's key value, of the type the caller passed. */
typedef struct TypedKey
{
	Datum		value;
	Oid			type;
} TypedKey;

/*
 * The primary key's column.  A key of several columns has no single value: those
 * rows are named by a jsonb object, with transition.
 */
static Bitmapset *
primary_key_column(Relation rel, void *arg)
{
	Bitmapset  *indexed;
	Bitmapset  *columns = NULL;
	int			member = -1;

	/* A deferrable primary key is no arbiter for ON CONFLICT, nor a key here. */
	if (!OidIsValid(compat_immediate_primary_key(rel)))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_COLUMN_REFERENCE),
				 errmsg("table \"%s\" has no primary key", RelationGetRelationName(rel)),
				 errhint("Pass the key as a jsonb object naming the columns of a unique constraint to inbox.transition().")));
	indexed = RelationGetIndexAttrBitmap(rel, INDEX_ATTR_BITMAP_PRIMARY_KEY);
	while ((member = bms_next_member(indexed, member)) >= 0)
		columns = bms_add_member(columns, member + FirstLowInvalidHeapAttributeNumber);
	if (bms_num_members(columns) != 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_COLUMN_REFERENCE),
				 errmsg("primary key of \"%s\" has %d columns, not one",
						RelationGetRelationName(rel), bms_num_members(columns)),
				 errhint("Pass the key as a jsonb object naming its columns to inbox.transition().")));
	return columns;
}

/* The assignment cast of a key value, run once. */
static Datum
evaluate_key_cast(Expr *cast, Form_pg_attribute att)
{
	Const	   *result = (Const *) evaluate_expr(cast, att->atttypid, att->atttypmod,
												 att->attcollation);

	if (!IsA(result, Const) || result->constisnull)
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("key must not be null")));
	return result->constvalue;
}

/*
 * The key's value as a value of the key column's type.  A value of that type is
 * taken as it is; text, or an untyped literal (which arrives as unknown, a C
 * string), is read by the column type's input function, as the jsonb form reads a
 * string; any other type needs an assignment cast to the column's type, the cast
 * an INSERT into the column would apply.  (An untyped driver parameter gets the
 * column's type from untyped_params.c when the library is loaded.)
 */
static void
key_values_from_value(Relation rel, Bitmapset *keycols, void *arg, Datum *row, bool *rownulls)
{
	TypedKey   *key = (TypedKey *) arg;
	AttrNumber	attnum = bms_singleton_member(keycols);
	Form_pg_attribute att = TupleDescAttr(RelationGetDescr(rel), attnum - 1);
	Datum		value;

	if (key->type == att->atttypid)
		value = key->value;
	else if (key->type == TEXTOID || key->type == UNKNOWNOID)
	{
		Oid			typinput;
		Oid			typioparam;

		getTypeInputInfo(att->atttypid, &typinput, &typioparam);
		value = OidInputFunctionCall(typinput,
									 key->type == UNKNOWNOID ? DatumGetCString(key->value) :
									 TextDatumGetCString(key->value),
									 typioparam, att->atttypmod);
	}
	else
	{
		Const	   *given = makeConst(key->type, -1, InvalidOid, get_typlen(key->type),
									  key->value, false, get_typbyval(key->type));
		Node	   *cast = coerce_to_target_type(NULL, (Node *) given, key->type,
												 att->atttypid, att->atttypmod,
												 COERCION_ASSIGNMENT, COERCE_IMPLICIT_CAST, -1);

		if (cast == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("key is of type %s but key column %s of \"%s\" is of type %s",
							format_type_be(key->type), quote_identifier(NameStr(att->attname)),
							RelationGetRelationName(rel), format_type_be(att->atttypid)),
					 errhint("Pass a value of the column's type, or cast it.")));
		value = evaluate_key_cast((Expr *) cast, att);
	}
	for (int i = 0; i < RelationGetDescr(rel)->natts; i++)
	{
		row[i] = (Datum) 0;
		rownulls[i] = true;
	}
	row[attnum - 1] = value;
	rownulls[attnum - 1] = false;
}

static const KeyForm typed_key = {primary_key_column, key_values_from_value};

/*
 * inbox.transition_key(target, key, state_column, [from_states,] to_state): the
 * row named by the value of its table's primary key, a single column.  Not an
 * overload of transition: a call with an untyped literal as the key would be
 * ambiguous between the two.  The key is "any": an anyelement argument refuses an
 * untyped literal outright.
 */
PG_FUNCTION_INFO_V1(inbox_transition_key);
Datum
inbox_transition_key(PG_FUNCTION_ARGS)
{
	AclMode		held;
	Relation	rel = shape_open(fcinfo, 0, TRANSITION_RIGHTS, false, RowExclusiveLock, &held);
	TypedKey   *key = palloc(sizeof(TypedKey));

	if (PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("key must not be null")));
	key->value = PG_GETARG_DATUM(1);
	key->type = get_fn_expr_argtype(fcinfo->flinfo, 1);
	if (!OidIsValid(key->type))
		ereport(ERROR,
				(errcode(ERRCODE_INDETERMINATE_DATATYPE),
				 errmsg("could not determine the type of key")));
	return transition_common(fcinfo, rel, held, &typed_key, key);
}
