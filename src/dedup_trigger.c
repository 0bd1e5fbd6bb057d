/*
 * dedup_trigger.c
 *		inbox.dedup_trigger('<inbox>', '<id column>'): a BEFORE INSERT row trigger
 *		that makes a sink which only inserts (COPY, logical replication, a
 *		connector) idempotent without changing its SQL.
 *
 * Each new row's id is claimed in the inbox, in the inserting transaction: a
 * fresh id lets the row through, a seen one drops it silently (the row count of
 * the INSERT or COPY says how many got in).  Claim and row commit together, so a
 * rolled-back load leaves no claims and its retry loads every row.  Two loads
 * racing with the same id behave like two claims: the second waits for the first
 * and drops its row if the first commits.
 *
 * The arguments are checked at the first row, when the trigger fires; a mistake
 * there fails that INSERT with a message naming the trigger, never silently
 * passing rows through.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/varlena.h"

#include "inbox.h"

/* What the first row of a statement found out, kept for the rest of it. */
typedef struct DedupTarget
{
	Oid			inbox;
	AttrNumber	attnum;
	Oid			idtype;			/* the type the id is handed to claim as */
	bool		widen;			/* an int2 or int4 column for a bigint inbox */
} DedupTarget;

static void
check_firing(FunctionCallInfo fcinfo)
{
	TriggerData *data = (TriggerData *) fcinfo->context;

	if (!CALLED_AS_TRIGGER(fcinfo) || !TRIGGER_FIRED_BEFORE(data->tg_event) ||
		!TRIGGER_FIRED_FOR_ROW(data->tg_event) || !TRIGGER_FIRED_BY_INSERT(data->tg_event))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("dedup_trigger must be fired BEFORE INSERT FOR EACH ROW")));
	if (data->tg_trigger->tgnargs != 2)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("trigger \"%s\" needs two arguments, the inbox and the id column",
						data->tg_trigger->tgname),
				 errhint("Create it as ... EXECUTE FUNCTION inbox.dedup_trigger('my_inbox', 'id').")));
}

static Oid
resolve_inbox(const char *trigger, const char *name)
{
	List	   *names = textToQualifiedNameList(cstring_to_text(name));
	Oid			relid = RangeVarGetRelid(makeRangeVarFromNameList(names), NoLock, true);

	if (!OidIsValid(relid))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("inbox \"%s\" named by trigger \"%s\" does not exist", name, trigger)));
	return relid;
}

/* The id column: a user column whose values are keys of the inbox. */
static void
resolve_column(DedupTarget *target, TriggerData *data, const InboxInfo *inbox,
			   const char *column)
{
	TupleDesc	desc = RelationGetDescr(data->tg_relation);
	int			attnum = SPI_fnumber(desc, column);
	Oid			coltype;

	if (attnum <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_COLUMN),
				 errmsg("column \"%s\" named by trigger \"%s\" does not exist in table \"%s\"",
						column, data->tg_trigger->tgname,
						RelationGetRelationName(data->tg_relation))));
	coltype = getBaseType(TupleDescAttr(desc, attnum - 1)->atttypid);

	target->attnum = attnum;
	target->widen = false;
	if (coltype == inbox->keytype || coltype == TEXTOID)
		target->idtype = coltype;
	else if (coltype == VARCHAROID || coltype == BPCHAROID)
		target->idtype = TEXTOID;	/* the same bytes as text */
	else if (inbox->keytype == INT8OID && (coltype == INT4OID || coltype == INT2OID))
	{
		target->idtype = INT8OID;
		target->widen = true;
	}
	else
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("column \"%s\" of type %s cannot hold ids of inbox \"%s\"",
						column, format_type_be(coltype), get_rel_name(inbox->relid)),
				 errdetail("The inbox has keys of type %s.", format_type_be(inbox->keytype))));
}

static DedupTarget *
dedup_target(FunctionCallInfo fcinfo)
{
	TriggerData *data = (TriggerData *) fcinfo->context;
	DedupTarget *target = (DedupTarget *) fcinfo->flinfo->fn_extra;
	char	  **args;
	InboxInfo  *inbox;

	if (target != NULL)
		return target;

	check_firing(fcinfo);
	args = data->tg_trigger->tgargs;
	inbox = registry_lookup_relid(fcinfo, resolve_inbox(data->tg_trigger->tgname, args[0]),
								  RowExclusiveLock, ACL_INSERT | ACL_SELECT);

	target = MemoryContextAlloc(fcinfo->flinfo->fn_mcxt, sizeof(DedupTarget));
	target->inbox = inbox->relid;
	resolve_column(target, data, inbox, args[1]);
	fcinfo->flinfo->fn_extra = target;
	return target;
}

PG_FUNCTION_INFO_V1(inbox_dedup_trigger);
Datum
inbox_dedup_trigger(PG_FUNCTION_ARGS)
{
	DedupTarget *target = dedup_target(fcinfo);
	TriggerData *data = (TriggerData *) fcinfo->context;
	HeapTuple	row = data->tg_trigtuple;
	InboxInfo  *inbox = registry_lookup_relid(fcinfo, target->inbox, RowExclusiveLock,
											   ACL_INSERT | ACL_SELECT);
	bool		isnull;
	Datum		value = heap_getattr(row, target->attnum, RelationGetDescr(data->tg_relation),
									 &isnull);
	Datum		id;
	bool		claimed;

	if (isnull)
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("message id must not be null"),
				 errdetail("Column \"%s\" of the new row in \"%s\" is null.",
						   NameStr(TupleDescAttr(RelationGetDescr(data->tg_relation),
												 target->attnum - 1)->attname),
						   RelationGetRelationName(data->tg_relation))));
	if (target->widen)
		value = Int64GetDatum(TupleDescAttr(RelationGetDescr(data->tg_relation),
											target->attnum - 1)->atttypid == INT2OID ?
							  (int64) DatumGetInt16(value) : (int64) DatumGetInt32(value));
	else if (target->idtype == TEXTOID)
		value = PointerGetDatum(PG_DETOAST_DATUM_PACKED(value));
	id = message_id_from_element(value, false, target->idtype, inbox, 0);

	claimed = claim_one_connecting(inbox, id);

	return PointerGetDatum(claimed ? row : NULL);
}
