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
 * change.  States compare by their text form as values of the column's type
 * (shape_state_text), as transition compares them.  A machine is checked the same
 * way whether guard_transitions installs it or someone created the trigger by hand
 * (machine_build): anything else is a clear error, never a read of a malformed one.
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/pg_trigger.h"
#include "utils/fmgroids.h"
#include "common/hashfn.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/json.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

#include "citus_tables.h"
#include "inbox.h"
#include "spi_util.h"
#include "state_machine.h"
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

/*
 * A machine as its edges, every state in its text form as a value of the column's
 * type (shape_state_text), so that states compare the way transition compares them.
 */
typedef struct StateMachine
{
	int			nedges;
	char	  **from;
	char	  **to;
} StateMachine;

/* Where an error about a machine stored in a trigger comes from. */
typedef struct MachineSource
{
	const char *trigger;
	Relation	rel;
} MachineSource;

static void
machine_error_context(void *arg)
{
	MachineSource *source = (MachineSource *) arg;

	errcontext("state machine of trigger \"%s\" on \"%s\"",
			   source->trigger, RelationGetRelationName(source->rel));
}

static void
machine_add(StateMachine *machine, int *room, const char *from, const char *to)
{
	for (int i = 0; i < machine->nedges; i++)
		if (strcmp(machine->from[i], from) == 0 && strcmp(machine->to[i], to) == 0)
			return;
	if (machine->nedges == *room)
	{
		*room *= 2;
		machine->from = repalloc(machine->from, sizeof(char *) * *room);
		machine->to = repalloc(machine->to, sizeof(char *) * *room);
	}
	machine->from[machine->nedges] = pstrdup(from);
	machine->to[machine->nedges] = pstrdup(to);
	machine->nedges++;
}

/*
 * Edges are {"state": ["state", ...], ...} and nothing else, and every state is a
 * value of the column's type.  The one check of a machine's shape, whether it
 * comes from guard_transitions or from a trigger someone created by hand.
 */
static StateMachine *
machine_build(Relation rel, AttrNumber attnum, Jsonb *edges)
{
	StateMachine *machine = palloc0(sizeof(StateMachine));
	int			room = 8;
	JsonbIterator *it;
	JsonbValue	v;
	JsonbIteratorToken tok;
	char	   *from = NULL;
	char	   *from_text = NULL;

	machine->from = palloc(sizeof(char *) * room);
	machine->to = palloc(sizeof(char *) * room);
	if (!JB_ROOT_IS_OBJECT(edges))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("edges must be a jsonb object"),
				 errhint("Write edges like {\"PENDING\": [\"PAID\", \"CANCELLED\"]}.")));

	it = JsonbIteratorInit(&edges->root);
	while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
	{
		JsonbIterator *targets;
		JsonbIteratorToken ttok;
		JsonbValue	t;

		if (tok == WJB_KEY)
		{
			from = pnstrdup(v.val.string.val, v.val.string.len);
			from_text = shape_state_text(rel, attnum, from, NULL);
			continue;
		}
		if (tok != WJB_VALUE)
			continue;
		if (v.type != jbvBinary || !JsonContainerIsArray(v.val.binary.data))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("edges of state \"%s\" must be an array of states", from),
					 errhint("Write edges like {\"PENDING\": [\"PAID\", \"CANCELLED\"]}.")));
		targets = JsonbIteratorInit(v.val.binary.data);
		while ((ttok = JsonbIteratorNext(&targets, &t, true)) != WJB_DONE)
		{
			if (ttok != WJB_ELEM)
				continue;
			if (t.type != jbvString)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("edges of state \"%s\" must list states as strings", from)));
			machine_add(machine, &room, from_text,
						shape_state_text(rel, attnum, pnstrdup(t.val.string.val, t.val.string.len), NULL));
		}
	}
	return machine;
}

/* The machine a trigger holds, checked as guard_transitions checks a new one. */
static StateMachine *
machine_from_trigger(Relation rel, AttrNumber attnum, const Trigger *trigger)
{
	MachineSource source = {trigger->tgname, rel};
	ErrorContextCallback callback;
	StateMachine *machine;
	Jsonb	   *edges;

	callback.callback = machine_error_context;
	callback.arg = &source;
	callback.previous = error_context_stack;
	error_context_stack = &callback;
	edges = DatumGetJsonbP(DirectFunctionCall1(jsonb_in, CStringGetDatum(trigger->tgargs[1])));
	machine = machine_build(rel, attnum, edges);
	error_context_stack = callback.previous;
	return machine;
}

/* Does the machine allow from -> to? */
static bool
edge_allowed(const StateMachine *machine, const char *from, const char *to)
{
	for (int i = 0; i < machine->nedges; i++)
		if (strcmp(machine->from[i], from) == 0 && strcmp(machine->to[i], to) == 0)
			return true;
	return false;
}

/*
 * The states a machine allows moving to to_state (in its text form) from, as
 * text[] of text forms, or NULL when no machine guards the column.
 */
ArrayType *
state_machine_sources(Relation rel, const char *column, const char *to_state, Oid nspid)
{
	const Trigger *trigger = find_machine(rel, column, nspid);
	StateMachine *machine;
	ArrayBuildState *sources;

	if (trigger == NULL)
		return NULL;
	machine = machine_from_trigger(rel, shape_column(rel, column), trigger);
	sources = initArrayResult(TEXTOID, CurrentMemoryContext, false);
	for (int i = 0; i < machine->nedges; i++)
		if (strcmp(machine->to[i], to_state) == 0)
			accumArrayResult(sources, CStringGetTextDatum(machine->from[i]), false, TEXTOID,
							 CurrentMemoryContext);
	return DatumGetArrayTypeP(makeArrayResult(sources, CurrentMemoryContext));
}

static void
spi_run(const char *sql)
{
	int			rc = SPI_execute(sql, false, 0);

	if (rc != SPI_OK_UTILITY)
		elog(ERROR, "\"%s\" returned %s", sql, SPI_result_code_string(rc));
}

/*
 * Is there, before any lock, a trigger that installing a machine on this column
 * would drop or be refused by: one of the machine's name, or a machine for the
 * column under another name?  Read from pg_trigger without locking the table; the
 * answer only picks which rights to check first.
 */
static bool
trigger_in_the_way(Oid relid, const char *column, const char *name, Oid nspid)
{
	Relation	triggers = table_open(TriggerRelationId, AccessShareLock);
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tuple;
	bool		found = false;

	ScanKeyInit(&key, Anum_pg_trigger_tgrelid, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(relid));
	scan = systable_beginscan(triggers, TriggerRelidNameIndexId, true, NULL, 1, &key);
	while (!found && HeapTupleIsValid(tuple = systable_getnext(scan)))
	{
		Form_pg_trigger form = (Form_pg_trigger) GETSTRUCT(tuple);
		char	   *fname = get_func_name(form->tgfoid);

		if (strcmp(NameStr(form->tgname), name) == 0)
			found = true;
		else if (fname != NULL && strcmp(fname, GUARD_FUNCTION) == 0 &&
				 get_func_namespace(form->tgfoid) == nspid && form->tgnargs == 2)
		{
			bool		isnull;
			Datum		args = heap_getattr(tuple, Anum_pg_trigger_tgargs,
											RelationGetDescr(triggers), &isnull);

			if (!isnull)
			{
				bytea	   *bytes = DatumGetByteaPP(args);

				/* The first argument, up to its NUL, is the column. */
				found = VARSIZE_ANY_EXHDR(bytes) > strlen(column) &&
					memcmp(VARDATA_ANY(bytes), column, strlen(column) + 1) == 0;
			}
		}
	}
	systable_endscan(scan);
	table_close(triggers, AccessShareLock);
	return found;
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
	Relation	rel;
	char	   *column;
	AttrNumber	attnum;
	Jsonb	   *edges;
	const Trigger *old;
	char	   *name;
	char	   *qualname;
	bool		replaces;
	int			citus;

	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("target must not be null")));
	if (PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("state_column must not be null")));
	column = text_to_cstring(PG_GETARG_TEXT_PP(1));
	name = guard_name(column);

	/*
	 * The rights of the DDL below, before its lock: replacing a machine drops a
	 * trigger (the owner's right), installing one creates a trigger (TRIGGER).
	 */
	replaces = trigger_in_the_way(PG_GETARG_OID(0), column, name, nspid);
	rel = shape_open(fcinfo, 0, replaces ? ACL_NO_RIGHTS : ACL_TRIGGER, replaces,
					 ShareRowExclusiveLock, NULL);
	qualname = shape_qualname(rel);
	attnum = shape_column(rel, column);
	edges = shape_jsonb_arg(fcinfo, 2, "edges", "{\"PENDING\": [\"PAID\"]}");
	(void) machine_build(rel, attnum, edges);

	CheckNameFree(rel, name, nspid);
	old = find_machine(rel, column, nspid);

	spi_connect();
	citus = citus_triggers_begin(RelationGetRelid(rel));
	/* The DDL checks the caller's rights again, now under the lock. */
	if (old != NULL)
		spi_run(psprintf("DROP TRIGGER %s ON %s", quote_identifier(old->tgname), qualname));
	spi_run(psprintf("CREATE TRIGGER %s BEFORE UPDATE OF %s ON %s FOR EACH ROW "
					 "EXECUTE FUNCTION %s.%s(%s, %s)",
					 quote_identifier(name), quote_identifier(column), qualname,
					 quote_identifier(get_namespace_name(nspid)), GUARD_FUNCTION,
					 quote_literal_cstr(column),
					 quote_literal_cstr(JsonbToCString(NULL, &edges->root, VARSIZE(edges)))));
	citus_triggers_end(citus);
	SPI_finish();
	table_close(rel, NoLock);

	PG_RETURN_VOID();
}

PG_FUNCTION_INFO_V1(inbox_unguard_transitions);
Datum
inbox_unguard_transitions(PG_FUNCTION_ARGS)
{
	Oid			nspid = get_func_namespace(fcinfo->flinfo->fn_oid);
	Relation	rel = shape_open(fcinfo, 0, ACL_NO_RIGHTS, true, ShareRowExclusiveLock, NULL);
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
		int			citus;

		spi_connect();
		citus = citus_triggers_begin(RelationGetRelid(rel));
		spi_run(psprintf("DROP TRIGGER %s ON %s", quote_identifier(old->tgname), shape_qualname(rel)));
		citus_triggers_end(citus);
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

/*
 * Cached per trigger call site (one statement): the machine, rebuilt if the text
 * or the column's type changes.  Set only once built, so that an error while
 * building leaves nothing half made behind.
 */
typedef struct GuardCache
{
	char	   *edges_text;
	Oid			type;
	int32		typmod;
	StateMachine *machine;
} GuardCache;

static StateMachine *
guard_machine(FunctionCallInfo fcinfo, Relation rel, AttrNumber attnum, const Trigger *trigger)
{
	GuardCache *cache = (GuardCache *) fcinfo->flinfo->fn_extra;
	Form_pg_attribute att = TupleDescAttr(RelationGetDescr(rel), attnum - 1);
	MemoryContext oldcxt;
	GuardCache *fresh;

	if (cache != NULL && strcmp(cache->edges_text, trigger->tgargs[1]) == 0 &&
		cache->type == att->atttypid && cache->typmod == att->atttypmod)
		return cache->machine;

	oldcxt = MemoryContextSwitchTo(fcinfo->flinfo->fn_mcxt);
	fresh = palloc0(sizeof(GuardCache));
	fresh->edges_text = pstrdup(trigger->tgargs[1]);
	fresh->type = att->atttypid;
	fresh->typmod = att->atttypmod;
	fresh->machine = machine_from_trigger(rel, attnum, trigger);
	MemoryContextSwitchTo(oldcxt);
	fcinfo->flinfo->fn_extra = fresh;
	return fresh->machine;
}

/* ["PAID", "CANCELLED"]: the states the machine allows from, or NULL for none. */
static char *
machine_targets(const StateMachine *machine, const char *from)
{
	StringInfoData buf;

	initStringInfo(&buf);
	for (int i = 0; from != NULL && i < machine->nedges; i++)
	{
		if (strcmp(machine->from[i], from) != 0)
			continue;
		appendStringInfoString(&buf, buf.len == 0 ? "[" : ", ");
		escape_json(&buf, machine->to[i]);
	}
	if (buf.len == 0)
		return NULL;
	appendStringInfoChar(&buf, ']');
	return buf.data;
}

static void
report_illegal(Relation rel, AttrNumber attnum, const StateMachine *machine, const char *from,
			   const char *to)
{
	char	   *targets = machine_targets(machine, from);
	const char *column = NameStr(TupleDescAttr(RelationGetDescr(rel), attnum - 1)->attname);

	ereport(ERROR,
			(errcode(ERRCODE_ILLEGAL_STATE_TRANSITION),
			 errmsg("illegal state transition from %s%s%s to %s%s%s",
					from ? "\"" : "", from ? from : "NULL", from ? "\"" : "",
					to ? "\"" : "", to ? to : "NULL", to ? "\"" : ""),
			 targets != NULL ?
			 errdetail("The state machine on column %s of \"%s\" allows \"%s\" to move to %s.",
					   quote_identifier(column), RelationGetRelationName(rel), from, targets) :
			 from ?
			 errdetail("The state machine on column %s of \"%s\" allows no moves from \"%s\".",
					   quote_identifier(column), RelationGetRelationName(rel), from) :
			 errdetail("The state machine on column %s of \"%s\" allows no moves from NULL.",
					   quote_identifier(column), RelationGetRelationName(rel)),
			 errhint("Change the machine with inbox.guard_transitions() if this move should be legal."),
			 errtablecol(rel, attnum)));
}

/*
 * States are the column's values in their text form (SPI_getvalue is the type's
 * output function), compared with the machine's states in the same form.
 */
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
	StateMachine *machine;

	CheckGuardCall(fcinfo);
	rel = data->tg_relation;
	desc = RelationGetDescr(rel);
	attnum = SPI_fnumber(desc, data->tg_trigger->tgargs[0]);
	if (attnum <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_COLUMN),
				 errmsg("state machine column \"%s\" of \"%s\" does not exist",
						data->tg_trigger->tgargs[0], RelationGetRelationName(rel)),
				 errdetail("Trigger \"%s\" holds a state machine for that column.",
						   data->tg_trigger->tgname),
				 errhint("Install state machines with inbox.guard_transitions().")));

	from = SPI_getvalue(data->tg_trigtuple, desc, attnum);
	to = SPI_getvalue(data->tg_newtuple, desc, attnum);
	if ((from == NULL && to == NULL) || (from != NULL && to != NULL && strcmp(from, to) == 0))
		return PointerGetDatum(data->tg_newtuple);

	machine = guard_machine(fcinfo, rel, attnum, data->tg_trigger);
	if (from == NULL || to == NULL || !edge_allowed(machine, from, to))
		report_illegal(rel, attnum, machine, from, to);

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
