/*
 * state_machine.c
 *		guard_transitions: a state machine on a column, enforced for every writer
 *		(plain UPDATEs, ORMs, other functions), not only for inbox.transition.
 *
 * A machine is a BEFORE UPDATE OF <column> row trigger running guard_trigger with
 * two arguments: the column name and the edges as jsonb text, such as
 * {"PENDING": ["PAID", "CANCELLED"], "PAID": ["SHIPPED"]}.  Keeping the machine in
 * the trigger itself means pg_dump carries it, DROP TABLE takes it along, and no
 * second copy can disagree with it.  The trigger is named inbox_guard_<column>, so
 * installing again replaces it; unguard_transitions drops it; the view
 * inbox.state_machines lists them.
 *
 * An UPDATE that leaves the state as it was is not a transition and always passes.
 * NULL is not a state: moving to or from NULL is refused like any other illegal
 * change.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/pg_trigger.h"
#include "common/hashfn.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

#include "inbox.h"
#include "table_shape.h"

#define GUARD_FUNCTION "guard_trigger"
#define GUARD_PREFIX "inbox_guard_"

/* Our own SQLSTATE, in the integrity-violation class: 23 with an I subclass. */
#define ERRCODE_ILLEGAL_STATE_TRANSITION MAKE_SQLSTATE('2','3','I','0','1')

/* The trigger name for a column: readable, and within NAMEDATALEN. */
static char *
guard_name(const char *column)
{
	char	   *name = psprintf("%s%s", GUARD_PREFIX, column);
	int			room = NAMEDATALEN - 1 - strlen(GUARD_PREFIX) - 9;

	if (strlen(name) < NAMEDATALEN)
		return name;
	/* Long names keep a readable prefix and a hash of the whole name. */
	return psprintf("%s%.*s_%08x", GUARD_PREFIX, pg_mbcliplen(column, strlen(column), room),
					column, (unsigned int) hash_bytes((const unsigned char *) column, strlen(column)));
}

static bool
is_guard_trigger(const Trigger *trigger, Oid nspid)
{
	char	   *name = get_func_name(trigger->tgfoid);

	return name != NULL && strcmp(name, GUARD_FUNCTION) == 0 &&
		get_func_namespace(trigger->tgfoid) == nspid && trigger->tgnargs == 2;
}

/* The machine guarding a column of rel, as its trigger, or NULL. */
static const Trigger *
find_machine(Relation rel, const char *column, Oid nspid)
{
	TriggerDesc *desc = rel->trigdesc;

	if (desc == NULL)
		return NULL;
	for (int i = 0; i < desc->numtriggers; i++)
	{
		const Trigger *trigger = &desc->triggers[i];

		if (is_guard_trigger(trigger, nspid) && strcmp(trigger->tgargs[0], column) == 0)
			return trigger;
	}
	return NULL;
}

static Jsonb *
parse_edges(const char *text)
{
	return DatumGetJsonbP(DirectFunctionCall1(jsonb_in, CStringGetDatum(text)));
}

/* Does the machine allow from -> to? */
static bool
edge_allowed(Jsonb *edges, const char *from, const char *to)
{
	JsonbValue *targets = getKeyJsonValueFromContainer(&edges->root, from, strlen(from), NULL);
	JsonbIterator *it;
	JsonbValue	v;
	JsonbIteratorToken tok;

	if (targets == NULL || targets->type != jbvBinary)
		return false;
	it = JsonbIteratorInit(targets->val.binary.data);
	while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
		if (tok == WJB_ELEM && v.type == jbvString &&
			v.val.string.len == (int) strlen(to) && memcmp(v.val.string.val, to, v.val.string.len) == 0)
			return true;
	return false;
}

/*
 * The states a machine allows moving to to_state from, as text[], or NULL when no
 * machine guards the column.
 */
ArrayType *
state_machine_sources(Relation rel, const char *column, const char *to_state, Oid nspid)
{
	const Trigger *trigger = find_machine(rel, column, nspid);
	Jsonb	   *edges;
	JsonbIterator *it;
	JsonbValue	v;
	JsonbIteratorToken tok;
	ArrayBuildState *sources;

	if (trigger == NULL)
		return NULL;
	edges = parse_edges(trigger->tgargs[1]);
	sources = initArrayResult(TEXTOID, CurrentMemoryContext, false);
	it = JsonbIteratorInit(&edges->root);
	while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
	{
		if (tok == WJB_KEY)
		{
			char	   *from = pnstrdup(v.val.string.val, v.val.string.len);

			if (edge_allowed(edges, from, to_state))
				accumArrayResult(sources, CStringGetTextDatum(from), false, TEXTOID,
								 CurrentMemoryContext);
		}
	}
	return DatumGetArrayTypeP(makeArrayResult(sources, CurrentMemoryContext));
}

/* Every state named by the machine must be a value of the column's type. */
static void
CheckStateValue(Relation rel, AttrNumber attnum, const char *state)
{
	Form_pg_attribute att = TupleDescAttr(RelationGetDescr(rel), attnum - 1);
	Oid			typinput;
	Oid			typioparam;

	getTypeInputInfo(att->atttypid, &typinput, &typioparam);
	(void) OidInputFunctionCall(typinput, unconstify(char *, state), typioparam, att->atttypmod);
}

/* Edges are {"state": ["state", ...], ...} and nothing else. */
static void
CheckEdges(Relation rel, AttrNumber attnum, Jsonb *edges)
{
	JsonbIterator *it = JsonbIteratorInit(&edges->root);
	JsonbValue	v;
	JsonbIteratorToken tok;
	char	   *from = NULL;

	while ((tok = JsonbIteratorNext(&it, &v, false)) != WJB_DONE)
	{
		if (tok == WJB_KEY)
		{
			from = pnstrdup(v.val.string.val, v.val.string.len);
			CheckStateValue(rel, attnum, from);
		}
		else if (tok == WJB_VALUE)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("edges of state \"%s\" must be an array of states", from),
					 errhint("Write edges like {\"PENDING\": [\"PAID\", \"CANCELLED\"]}.")));
		else if (tok == WJB_ELEM)
		{
			if (v.type != jbvString)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("edges of state \"%s\" must list states as strings", from)));
			CheckStateValue(rel, attnum, pnstrdup(v.val.string.val, v.val.string.len));
		}
		else if (tok == WJB_BEGIN_OBJECT && from != NULL)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("edges of state \"%s\" must be an array of states", from)));
	}
}

static void
spi_run(const char *sql)
{
	int			rc = SPI_execute(sql, false, 0);

	if (rc != SPI_OK_UTILITY)
		elog(ERROR, "\"%s\" returned %s", sql, SPI_result_code_string(rc));
}

/* A trigger of that name that is not ours is the user's: never replace it. */
static void
CheckNameFree(Relation rel, const char *name, Oid nspid)
{
	TriggerDesc *desc = rel->trigdesc;

	for (int i = 0; desc != NULL && i < desc->numtriggers; i++)
		if (strcmp(desc->triggers[i].tgname, name) == 0 && !is_guard_trigger(&desc->triggers[i], nspid))
			ereport(ERROR,
					(errcode(ERRCODE_DUPLICATE_OBJECT),
					 errmsg("trigger \"%s\" on \"%s\" already exists and is not a state machine",
							name, RelationGetRelationName(rel))));
}

PG_FUNCTION_INFO_V1(inbox_guard_transitions);
Datum
inbox_guard_transitions(PG_FUNCTION_ARGS)
{
	Oid			nspid = get_func_namespace(fcinfo->flinfo->fn_oid);
	Relation	rel = shape_open(fcinfo, 0, ShareRowExclusiveLock);
	char	   *column;
	AttrNumber	attnum;
	Jsonb	   *edges;
	const Trigger *old;
	char	   *name;
	char	   *qualname = shape_qualname(rel);

	if (PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("state_column must not be null")));
	column = text_to_cstring(PG_GETARG_TEXT_PP(1));
	attnum = shape_column(rel, column);
	edges = shape_jsonb_arg(fcinfo, 2, "edges", "{\"PENDING\": [\"PAID\"]}");
	CheckEdges(rel, attnum, edges);

	name = guard_name(column);
	CheckNameFree(rel, name, nspid);
	old = find_machine(rel, column, nspid);

	spi_connect();
	/* The caller's rights: only the owner (or TRIGGER privilege) may do this. */
	if (old != NULL)
		spi_run(psprintf("DROP TRIGGER %s ON %s", quote_identifier(old->tgname), qualname));
	spi_run(psprintf("CREATE TRIGGER %s BEFORE UPDATE OF %s ON %s FOR EACH ROW "
					 "EXECUTE FUNCTION %s.%s(%s, %s)",
					 quote_identifier(name), quote_identifier(column), qualname,
					 quote_identifier(get_namespace_name(nspid)), GUARD_FUNCTION,
					 quote_literal_cstr(column),
					 quote_literal_cstr(JsonbToCString(NULL, &edges->root, VARSIZE(edges)))));
	SPI_finish();
	table_close(rel, NoLock);

	PG_RETURN_VOID();
}

PG_FUNCTION_INFO_V1(inbox_unguard_transitions);
Datum
inbox_unguard_transitions(PG_FUNCTION_ARGS)
{
	Oid			nspid = get_func_namespace(fcinfo->flinfo->fn_oid);
	Relation	rel = shape_open(fcinfo, 0, ShareRowExclusiveLock);
	const Trigger *old;
	char	   *column;

	if (PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("state_column must not be null")));
	column = text_to_cstring(PG_GETARG_TEXT_PP(1));
	(void) shape_column(rel, column);
	old = find_machine(rel, column, nspid);
	if (old != NULL)
	{
		spi_connect();
		spi_run(psprintf("DROP TRIGGER %s ON %s", quote_identifier(old->tgname), shape_qualname(rel)));
		SPI_finish();
	}
	table_close(rel, NoLock);

	PG_RETURN_BOOL(old != NULL);
}

/* The trigger protocol: before, per row, on update, with our two arguments. */
static void
CheckGuardCall(FunctionCallInfo fcinfo)
{
	TriggerData *data = (TriggerData *) fcinfo->context;

	if (!CALLED_AS_TRIGGER(fcinfo) || !TRIGGER_FIRED_BEFORE(data->tg_event) ||
		!TRIGGER_FIRED_FOR_ROW(data->tg_event) || !TRIGGER_FIRED_BY_UPDATE(data->tg_event))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("guard_trigger must be fired BEFORE UPDATE FOR EACH ROW"),
				 errhint("Install state machines with inbox.guard_transitions().")));
	if (data->tg_trigger->tgnargs != 2)
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("guard_trigger needs the state column and the edges as its arguments"),
				 errhint("Install state machines with inbox.guard_transitions().")));
}

/* Cached per trigger call site: the parsed edges, reparsed if the text changes. */
typedef struct GuardCache
{
	char	   *edges_text;
	Jsonb	   *edges;
} GuardCache;

static Jsonb *
guard_edges(FunctionCallInfo fcinfo, const char *text)
{
	GuardCache *cache = (GuardCache *) fcinfo->flinfo->fn_extra;
	MemoryContext oldcxt;

	if (cache != NULL && strcmp(cache->edges_text, text) == 0)
		return cache->edges;

	oldcxt = MemoryContextSwitchTo(fcinfo->flinfo->fn_mcxt);
	if (cache == NULL)
		cache = palloc0(sizeof(GuardCache));
	cache->edges_text = pstrdup(text);
	cache->edges = parse_edges(text);
	MemoryContextSwitchTo(oldcxt);
	fcinfo->flinfo->fn_extra = cache;
	return cache->edges;
}

static void
report_illegal(Relation rel, AttrNumber attnum, Jsonb *edges, const char *from, const char *to)
{
	JsonbValue *targets = from ? getKeyJsonValueFromContainer(&edges->root, from, strlen(from), NULL) : NULL;
	const char *column = NameStr(TupleDescAttr(RelationGetDescr(rel), attnum - 1)->attname);

	if (targets != NULL && (targets->type != jbvBinary || JsonContainerSize(targets->val.binary.data) == 0))
		targets = NULL;

	ereport(ERROR,
			(errcode(ERRCODE_ILLEGAL_STATE_TRANSITION),
			 errmsg("illegal state transition from %s%s%s to %s%s%s",
					from ? "\"" : "", from ? from : "NULL", from ? "\"" : "",
					to ? "\"" : "", to ? to : "NULL", to ? "\"" : ""),
			 targets != NULL ?
			 errdetail("The state machine on column %s of \"%s\" allows \"%s\" to move to %s.",
					   quote_identifier(column), RelationGetRelationName(rel), from,
					   JsonbToCString(NULL, targets->val.binary.data, targets->val.binary.len)) :
			 from ?
			 errdetail("The state machine on column %s of \"%s\" allows no moves from \"%s\".",
					   quote_identifier(column), RelationGetRelationName(rel), from) :
			 errdetail("The state machine on column %s of \"%s\" allows no moves from NULL.",
					   quote_identifier(column), RelationGetRelationName(rel)),
			 errhint("Change the machine with inbox.guard_transitions() if this move should be legal."),
			 errtablecol(rel, attnum)));
}

PG_FUNCTION_INFO_V1(inbox_guard_trigger);
Datum
inbox_guard_trigger(PG_FUNCTION_ARGS)
{
	TriggerData *data = (TriggerData *) fcinfo->context;
	Relation	rel;
	TupleDesc	desc;
	int			attnum;
	char	   *from;
	char	   *to;
	Jsonb	   *edges;

	CheckGuardCall(fcinfo);
	rel = data->tg_relation;
	desc = RelationGetDescr(rel);
	attnum = SPI_fnumber(desc, data->tg_trigger->tgargs[0]);
	if (attnum <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_COLUMN),
				 errmsg("state machine column \"%s\" of \"%s\" does not exist",
						data->tg_trigger->tgargs[0], RelationGetRelationName(rel))));

	from = SPI_getvalue(data->tg_trigtuple, desc, attnum);
	to = SPI_getvalue(data->tg_newtuple, desc, attnum);
	if ((from == NULL && to == NULL) || (from != NULL && to != NULL && strcmp(from, to) == 0))
		return PointerGetDatum(data->tg_newtuple);

	edges = guard_edges(fcinfo, data->tg_trigger->tgargs[1]);
	if (from == NULL || to == NULL || !edge_allowed(edges, from, to))
		report_illegal(rel, attnum, edges, from, to);

	return PointerGetDatum(data->tg_newtuple);
}

/*
 * tgargs as text[], for the inbox.state_machines view.  Anyone may call it with any
 * bytes, so it checks what pg_trigger guarantees: exactly tgnargs arguments, each
 * NUL-terminated inside the bytea and valid in the database encoding.  Anything
 * else is an error; it never reads past the bytea and never returns invalid text.
 */
PG_FUNCTION_INFO_V1(inbox_trigger_arguments);
Datum
inbox_trigger_arguments(PG_FUNCTION_ARGS)
{
	bytea	   *args = PG_GETARG_BYTEA_PP(0);
	int16		nargs = PG_GETARG_INT16(1);
	const char *p = VARDATA_ANY(args);
	const char *end = p + VARSIZE_ANY_EXHDR(args);
	ArrayBuildState *result = initArrayResult(TEXTOID, CurrentMemoryContext, false);

	if (nargs < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("trigger argument count must not be negative"),
				 errdetail("The count given is %d.", nargs),
				 errhint("Pass pg_trigger.tgargs and pg_trigger.tgnargs of one trigger.")));

	for (int i = 0; i < nargs; i++)
	{
		size_t		len = strnlen(p, end - p);

		if (p + len >= end)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
					 errmsg("trigger arguments end before argument %d of %d", i + 1, nargs),
					 errdetail("Each argument ends with a zero byte inside the bytea."),
					 errhint("Pass pg_trigger.tgargs and pg_trigger.tgnargs of one trigger.")));
		if (!pg_verify_mbstr(GetDatabaseEncoding(), p, (int) len, true))
			ereport(ERROR,
					(errcode(ERRCODE_CHARACTER_NOT_IN_REPERTOIRE),
					 errmsg("trigger argument %d is not valid in encoding \"%s\"",
							i + 1, GetDatabaseEncodingName()),
					 errhint("Pass pg_trigger.tgargs and pg_trigger.tgnargs of one trigger.")));
		accumArrayResult(result, PointerGetDatum(cstring_to_text_with_len(p, (int) len)), false,
						 TEXTOID, CurrentMemoryContext);
		p += len + 1;
	}
	if (p != end)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
				 errmsg("trigger arguments do not end after %d arguments", nargs),
				 errdetail("%d more bytes follow.", (int) (end - p)),
				 errhint("Pass pg_trigger.tgargs and pg_trigger.tgnargs of one trigger.")));
	PG_RETURN_DATUM(makeArrayResult(result, CurrentMemoryContext));
}
