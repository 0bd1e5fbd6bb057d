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
 * A sharded inbox claims (shard key, id): a third argument names the column of
 * the shard key, which defaults to the column named as the inbox's.  On Citus a
 * distributed table co-located with its sharded inbox fires the trigger on the
 * worker that holds both shards, and the claim is written there, in the
 * transaction of the rows (CREATE TRIGGER on a distributed table needs
 * citus.enable_unsafe_triggers).
 *
 * The arguments are checked at the first row, when the trigger fires; a mistake
 * there fails that INSERT with a message naming the trigger, never silently
 * passing rows through.
 *
 * The inbox is resolved relative to the trigger, never to the inserter's
 * search_path (which a session may point at a decoy inbox of its own): a
 * qualified name names its schema, an unqualified one is looked up in the schema
 * of the trigger's table only (for a partition, of the partitioned table the
 * trigger was created on).  The name is resolved at the first row of each
 * statement, never remembered longer: a schema renamed or a table moved to
 * another schema sends no invalidation that names the inbox, and a remembered
 * OID would then split one stream of ids between two inboxes.
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/namespace.h"
#include "catalog/pg_trigger.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "miscadmin.h"
#include "parser/parse_coerce.h"
#include "storage/lmgr.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/syscache.h"
#include "utils/varlena.h"

#include "inbox_info.h"
#include "claim.h"
#include "claim_routed.h"
#include "held_inbox.h"
#include "message_id.h"
#include "registry.h"
#include "spi_util.h"

/* What the first row of a statement found out, kept for the rest of it. */
typedef struct DedupTarget
{
	Oid			inbox;
	AttrNumber	attnum;
	Oid			idtype;			/* the type the id is handed to claim as */
	bool		widen;			/* an int2 or int4 column for a bigint inbox */
	bool		from_int2;		/* widen from int2 (the base type, for domains) */
	bool		unpad;			/* a char(n) column: its padding is not the id's */
	AttrNumber	shard_attnum;	/* a sharded inbox's shard key column, or 0 */
	Oid			shard_argtype;	/* its type, converted to the shard key's per row */
	HeldInbox  *held;			/* the inbox kept open for the statement's rows */
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
	if (data->tg_trigger->tgnargs != 2 && data->tg_trigger->tgnargs != 3)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("trigger \"%s\" needs two arguments, the inbox and the id column",
						data->tg_trigger->tgname),
				 errdetail("A sharded inbox's trigger may name the shard key column third."),
				 errhint("Create it as ... EXECUTE FUNCTION inbox.dedup_trigger('my_inbox', 'id').")));
}

/*
 * The table the trigger was created on.  A trigger on a partitioned table is
 * cloned onto each partition, which may live in another schema: its name
 * arguments were written relative to the partitioned table, found by following
 * tgparentid up to the trigger the user created.
 */
static Oid
trigger_defining_table(TriggerData *data)
{
	Oid			table = RelationGetRelid(data->tg_relation);
	Oid			tgoid = data->tg_trigger->tgoid;
	bool		clone = data->tg_trigger->tgisclone;
	Relation	triggers;

	if (!clone)
		return table;

	triggers = table_open(TriggerRelationId, AccessShareLock);
	while (clone)
	{
		ScanKeyData key;
		SysScanDesc scan;
		HeapTuple	tuple;
		Form_pg_trigger form;

		ScanKeyInit(&key, Anum_pg_trigger_oid, BTEqualStrategyNumber, F_OIDEQ,
					ObjectIdGetDatum(tgoid));
		scan = systable_beginscan(triggers, TriggerOidIndexId, true, NULL, 1, &key);
		tuple = systable_getnext(scan);
		if (!HeapTupleIsValid(tuple))
		{
			systable_endscan(scan);
			break;
		}
		form = (Form_pg_trigger) GETSTRUCT(tuple);
		table = form->tgrelid;
		tgoid = form->tgparentid;
		clone = OidIsValid(tgoid);
		systable_endscan(scan);
	}
	table_close(triggers, AccessShareLock);
	return table;
}

/*
 * The inbox named by the trigger's first argument: in the schema the name gives,
 * or else in the schema of the table the trigger was created on; never by
 * search_path.
 */
static Oid
resolve_inbox(TriggerData *data, const char *name)
{
	const char *trigger = data->tg_trigger->tgname;
	RangeVar   *rv = makeRangeVarFromNameList(textToQualifiedNameList(cstring_to_text(name)));
	Oid			table = trigger_defining_table(data);
	Oid			relid;

	if (rv->catalogname != NULL || rv->schemaname != NULL)
		relid = RangeVarGetRelid(rv, NoLock, true);
	else
		relid = get_relname_relid(rv->relname, get_rel_namespace(table));

	if (!OidIsValid(relid))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("inbox \"%s\" named by trigger \"%s\" does not exist", name, trigger),
				 rv->schemaname == NULL ?
				 errdetail("An unqualified inbox name is looked up in the schema of table \"%s\", \"%s\", not on the search_path.",
						   get_rel_name(table), get_namespace_name(get_rel_namespace(table))) : 0,
				 errhint("Name the inbox with its schema, as in inbox.dedup_trigger('my_schema.my_inbox', 'id').")));
	return relid;
}

/* Claims need INSERT and SELECT on the inbox: checked before it is locked. */
static void
CheckInboxRights(TriggerData *data, Oid relid)
{
	bool		missing = false;
	bool		allowed;

	/* A table dropped meanwhile is found out, and reported, after locking. */
	allowed = pg_class_aclcheck_ext(relid, GetUserId(), ACL_INSERT, &missing) == ACLCHECK_OK &&
		pg_class_aclcheck_ext(relid, GetUserId(), ACL_SELECT, &missing) == ACLCHECK_OK;
	if (!allowed && !missing)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied for inbox \"%s\" named by trigger \"%s\"",
						get_rel_name(relid), data->tg_trigger->tgname),
				 errdetail("Rows loaded through dedup_trigger are claimed with the rights of the inserting role, which needs INSERT and SELECT on the inbox.")));
}

/*
 * The trigger's inbox, locked.  Rights first; then, as RangeVarGetRelidExtended
 * does, resolve again after locking in case the inbox was dropped or replaced
 * meanwhile.
 */
static Oid
lock_trigger_inbox(TriggerData *data)
{
	const char *name = data->tg_trigger->tgargs[0];

	for (;;)
	{
		Oid			relid = resolve_inbox(data, name);

		CheckInboxRights(data, relid);
		LockRelationOid(relid, RowExclusiveLock);
		if (resolve_inbox(data, name) == relid)
			return relid;
		UnlockRelationOid(relid, RowExclusiveLock);
	}
}

/* A user column of the trigger's table, by name. */
static AttrNumber
trigger_column(TriggerData *data, const char *column)
{
	int			attnum = SPI_fnumber(RelationGetDescr(data->tg_relation), column);

	if (attnum <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_COLUMN),
				 errmsg("column \"%s\" named by trigger \"%s\" does not exist in table \"%s\"",
						column, data->tg_trigger->tgname,
						RelationGetRelationName(data->tg_relation))));
	return attnum;
}

/* The id column: a user column whose values are keys of the inbox. */
static void
resolve_column(DedupTarget *target, TriggerData *data, const InboxInfo *inbox,
			   const char *column)
{
	TupleDesc	desc = RelationGetDescr(data->tg_relation);
	AttrNumber	attnum = trigger_column(data, column);
	Oid			coltype;

	coltype = getBaseType(TupleDescAttr(desc, attnum - 1)->atttypid);

	target->attnum = attnum;
	target->widen = false;
	target->from_int2 = false;
	target->unpad = coltype == BPCHAROID;
	if (coltype == inbox->keytype || coltype == TEXTOID)
		target->idtype = coltype;
	else if (coltype == VARCHAROID || coltype == BPCHAROID)
		target->idtype = TEXTOID;	/* as the cast to text gives it */
	else if (inbox->keytype == INT8OID && (coltype == INT4OID || coltype == INT2OID))
	{
		target->idtype = INT8OID;
		target->widen = true;
		target->from_int2 = coltype == INT2OID;
	}
	else
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("column \"%s\" of type %s cannot hold ids of inbox \"%s\"",
						column, format_type_be(coltype), get_rel_name(inbox->relid)),
				 errdetail("The inbox has keys of type %s.", format_type_be(inbox->keytype))));
}

/*
 * The shard key column of a sharded inbox's trigger: named third, else the one
 * named as the inbox's shard key.  Its values must convert to the shard key's
 * type as claim_sharded converts its argument; an inbox without a shard key
 * takes no third argument.
 */
static void
resolve_shard_column(DedupTarget *target, TriggerData *data, const InboxInfo *inbox)
{
	const char *trigger = data->tg_trigger->tgname;
	char	   *column;
	Oid			coltype;

	target->shard_attnum = InvalidAttrNumber;
	if (inbox->shard_attnum == InvalidAttrNumber)
	{
		if (data->tg_trigger->tgnargs == 3)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("trigger \"%s\" names a shard key column, but inbox \"%s\" has no shard key",
							trigger, get_rel_name(inbox->relid)),
					 errhint("Give the trigger two arguments, the inbox and the id column.")));
		return;
	}
	column = data->tg_trigger->tgnargs == 3 ? data->tg_trigger->tgargs[2] :
		get_attname(inbox->relid, inbox->shard_attnum, false);
	target->shard_attnum = trigger_column(data, column);
	coltype = TupleDescAttr(RelationGetDescr(data->tg_relation),
							target->shard_attnum - 1)->atttypid;
	if (getBaseType(coltype) != inbox->shard_type && coltype != TEXTOID &&
		coltype != VARCHAROID &&
		!can_coerce_type(1, &coltype, &inbox->shard_type, COERCION_ASSIGNMENT))
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("column \"%s\" of type %s cannot hold shard keys of inbox \"%s\"",
						column, format_type_be(coltype), get_rel_name(inbox->relid)),
				 errdetail("The inbox's shard key is of type %s.", format_type_be(inbox->shard_type)),
				 data->tg_trigger->tgnargs == 2 ?
				 errhint("Name the shard key column as the trigger's third argument.") : 0));
	target->shard_argtype = coltype;
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
	inbox = registry_lookup_relid(fcinfo, lock_trigger_inbox(data), RowExclusiveLock,
								  ACL_INSERT | ACL_SELECT);

	target = MemoryContextAlloc(fcinfo->flinfo->fn_mcxt, sizeof(DedupTarget));
	target->inbox = inbox->relid;
	target->held = held_inbox_create(fcinfo->flinfo->fn_mcxt);
	resolve_column(target, data, inbox, args[1]);
	resolve_shard_column(target, data, inbox);
	fcinfo->flinfo->fn_extra = target;
	return target;
}

/* Column attnum of the new row, which must not be null: the id or the shard key. */
static Datum
new_row_value(TriggerData *data, AttrNumber attnum, bool shard_key)
{
	TupleDesc	desc = RelationGetDescr(data->tg_relation);
	bool		isnull;
	Datum		value = heap_getattr(data->tg_trigtuple, attnum, desc, &isnull);

	if (isnull)
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 shard_key ? errmsg("shard key must not be null") :
				 errmsg("message id must not be null"),
				 errdetail("Column \"%s\" of the new row in \"%s\" is null.",
						   NameStr(TupleDescAttr(desc, attnum - 1)->attname),
						   RelationGetRelationName(data->tg_relation))));
	return value;
}

/* Claim id under the new row's shard key, read from the shard key column. */
static bool
dedup_claim_sharded(const DedupTarget *target, TriggerData *data, InboxInfo *inbox, Datum id)
{
	Datum		shard = claim_routed_shard_value(inbox, target->shard_argtype,
												 new_row_value(data, target->shard_attnum, true));
	bool		claimed;

	spi_connect();
	claimed = claim_routed(inbox, id, &shard);
	SPI_finish();
	return claimed;
}

PG_FUNCTION_INFO_V1(inbox_dedup_trigger);
Datum
inbox_dedup_trigger(PG_FUNCTION_ARGS)
{
	DedupTarget *target = dedup_target(fcinfo);
	TriggerData *data = (TriggerData *) fcinfo->context;
	HeapTuple	row = data->tg_trigtuple;
	InboxInfo  *inbox;
	Datum		value;
	Datum		id;
	bool		claimed;

	/* Dropped by an earlier row's trigger: the next claim fails, as an INSERT would. */
	if (!SearchSysCacheExists1(RELOID, ObjectIdGetDatum(target->inbox)))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("inbox \"%s\" named by trigger \"%s\" was dropped during the statement",
						data->tg_trigger->tgargs[0], data->tg_trigger->tgname)));
	inbox = registry_lookup_relid(fcinfo, target->inbox, RowExclusiveLock,
								  ACL_INSERT | ACL_SELECT);
	value = new_row_value(data, target->attnum, false);
	if (target->widen)
		value = Int64GetDatum(target->from_int2 ? (int64) DatumGetInt16(value) :
							  (int64) DatumGetInt32(value));
	else if (target->unpad)
		value = DirectFunctionCall1(rtrim1, value); /* char(n) to text, as the cast does */
	else if (target->idtype == TEXTOID)
		value = PointerGetDatum(PG_DETOAST_DATUM_PACKED(value));
	id = message_id_from_element(value, false, target->idtype, inbox, 0);

	if (target->shard_attnum != InvalidAttrNumber)
		claimed = dedup_claim_sharded(target, data, inbox, id);
	else
		claimed = claim_one_connecting(inbox, id, target->held);

	return PointerGetDatum(claimed ? row : NULL);
}
