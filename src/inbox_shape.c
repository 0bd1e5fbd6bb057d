/*
 * inbox_shape.c
 *		Is this table still the inbox create_inbox made?
 *
 * The owner of an inbox can alter it at any time: retype, drop or rename a
 * column, replace the primary key, make the table unlogged.  The claim paths
 * read and write its rows by attribute number and type (claim_row.c,
 * claim_direct.c), so every fact they rely on is checked here whenever an inbox's
 * cache entry is loaded, and a relcache invalidation (which any such ALTER sends)
 * reloads it.  Anything unexpected is SQLSTATE 55000 (inbox_shape_error), never
 * a guess.
 *
 * What is checked:
 *	- an ordinary, permanent table (claims must survive a crash);
 *	- message_id of exactly the registered key type, and for text a
 *	  deterministic collation (equal ids must have equal bytes);
 *	- a primary key on exactly (message_id), or (shard key, message_id) for a
 *	  sharded inbox: no expression or predicate, btree with the types' default
 *	  operator classes and deterministic collations, checked immediately, valid;
 *	- for a sharded inbox, its marker constraint (inbox_shape_has_marker);
 *	- claimed_at, timestamptz;
 *	- each lease column, when present, of exactly its type (they may be missing
 *	  in inboxes made before they existed; lease features then say so).
 * Columns the owner added are allowed and left alone.
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/pg_am.h"
#include "catalog/pg_class.h"
#include "catalog/pg_collation.h"
#include "catalog/pg_index.h"
#include "catalog/pg_opclass.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "commands/defrem.h"
#include "nodes/makefuncs.h"
#include "rewrite/rewriteHandler.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"

#include "compat.h"
#include "inbox_info.h"
#include "direct_access.h"
#include "inbox_shape.h"
#include "inbox_sql.h"

/* The type each of create_inbox's columns must have, by InboxColumn. */
static const Oid column_types[INBOX_NUM_COLUMNS] = {
	[COL_CLAIMED_AT] = TIMESTAMPTZOID,
	[COL_FINGERPRINT] = BYTEAOID,
	[COL_RESULT] = JSONBOID,
	[COL_TOKEN] = INT8OID,
	[COL_LEASE_UNTIL] = TIMESTAMPTZOID,
	[COL_HOLDER_PID] = INT4OID,
	[COL_HOLDER_STARTED] = TIMESTAMPTZOID,
};

/* The 55000 error for a problem found by inbox_shape_problem; sharded names the function that made it. */
void
inbox_shape_error(Relation rel, const char *problem, bool sharded)
{
	const char *maker = sharded ? "create_sharded_inbox" : "create_inbox";

	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("inbox \"%s\" no longer has the shape %s made",
					RelationGetRelationName(rel), maker),
			 errdetail_internal("%s", problem),
			 errhint("Undo the change, or create a new inbox with inbox.%s() and copy the claims into it.",
					 maker)));
}

static bool
collation_ok(Oid collation)
{
	return !OidIsValid(collation) || get_collation_isdeterministic(collation);
}

/*
 * The live column called name, with exactly type typid and no typmod; 0 if
 * missing and not required.  Sets *problem otherwise.
 */
static AttrNumber
column_of_type(Relation rel, const char *name, Oid typid, bool required, char **problem)
{
	TupleDesc	desc = RelationGetDescr(rel);

	if (*problem != NULL)
		return InvalidAttrNumber;

	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		if (att->attisdropped || strcmp(NameStr(att->attname), name) != 0)
			continue;
		if (att->atttypid != typid || att->atttypmod != -1)
			*problem = psprintf("Column \"%s\" is of type %s; it must be %s.", name,
								format_type_with_typemod(att->atttypid, att->atttypmod),
								format_type_be(typid));
		else if (!collation_ok(att->attcollation))
			*problem = psprintf("Column \"%s\" has a nondeterministic collation.", name);
		return *problem == NULL ? att->attnum : InvalidAttrNumber;
	}
	if (required)
		*problem = psprintf("Column \"%s\" is missing.", name);
	return InvalidAttrNumber;
}

/* The operator class of column i of an index. */
static Oid
opclass_of(Relation index, int i)
{
	bool		isnull;
	Datum		indclass = SysCacheGetAttr(INDEXRELID, index->rd_indextuple,
										   Anum_pg_index_indclass, &isnull);

	return isnull ? InvalidOid : ((oidvector *) DatumGetPointer(indclass))->values[i];
}

/* Is column i of the index a plain btree column of its type's default operator class? */
static bool
plain_btree_column(Relation index, int i, Oid type)
{
	return opclass_of(index, i) == GetDefaultOpClass(type, BTREE_AM_OID);
}

/*
 * The primary key must be exactly the one create_inbox made: (message_id), or
 * (shard key, message_id) for a sharded inbox.
 */
static Oid
check_primary_key(Relation rel, InboxInfo *inbox, char **problem_out)
{
	Oid			pkindex = compat_immediate_primary_key(rel);
	Relation	index;
	Form_pg_index form;
	int			ncols = inbox->shard_attnum != InvalidAttrNumber ? 2 : 1;
	int			keycol = ncols - 1;
	Oid			eqop;
	char	   *problem = NULL;

	if (*problem_out != NULL)
		return InvalidOid;
	if (!OidIsValid(pkindex))
	{
		*problem_out = "It has no primary key, or only a deferrable one.";
		return InvalidOid;
	}

	index = index_open(pkindex, AccessShareLock);
	form = index->rd_index;
	if (form->indnatts != ncols || form->indnkeyatts != ncols ||
		form->indkey.values[keycol] != inbox->key_attnum ||
		(ncols == 2 && form->indkey.values[0] != inbox->shard_attnum))
		problem = ncols == 1 ? "Its primary key is not exactly (message_id)." :
			psprintf("Its primary key is not exactly (%s, message_id).", inbox->shard_column);
	else if (!heap_attisnull(index->rd_indextuple, Anum_pg_index_indexprs, NULL) ||
			 !heap_attisnull(index->rd_indextuple, Anum_pg_index_indpred, NULL))
		problem = "Its primary key has an expression or a predicate.";
	else if (index->rd_rel->relam != BTREE_AM_OID ||
			 !plain_btree_column(index, keycol, inbox->keytype) ||
			 (ncols == 2 && !plain_btree_column(index, 0, inbox->shard_type)))
		problem = "Its primary key does not use the default btree operator classes of its types.";
	else if (!collation_ok(index->rd_indcollation[keycol]) ||
			 (ncols == 2 && !collation_ok(index->rd_indcollation[0])))
		problem = "Its primary key has a nondeterministic collation.";
	else if (!form->indimmediate || !form->indisvalid || !form->indisready)
		problem = "Its primary key is deferrable or not valid.";

	if (problem == NULL)
	{
		eqop = get_opfamily_member(index->rd_opfamily[keycol], inbox->keytype, inbox->keytype,
								   BTEqualStrategyNumber);
		if (!OidIsValid(eqop))
			problem = "Its primary key has no equality operator.";
		else
			inbox->key_eq = get_opcode(eqop);
	}
	if (problem == NULL && ncols == 2)
	{
		/* The operator class's input type: a domain's is its base type's. */
		eqop = get_opfamily_member(index->rd_opfamily[0], index->rd_opcintype[0],
								   index->rd_opcintype[0], BTEqualStrategyNumber);
		if (!OidIsValid(eqop))
			problem = "Its primary key has no equality operator.";
		else
		{
			inbox->shard_eq = get_opcode(eqop);
			inbox->shard_collation = index->rd_indcollation[0];
		}
	}
	index_close(index, AccessShareLock);
	*problem_out = problem;
	return pkindex;
}

/*
 * The first column of a two-column primary key whose second is message_id: the
 * shard key of an inbox known only by its marker.  NULL otherwise.
 */
char *
inbox_shape_shard_key(Relation rel)
{
	Oid			pkindex = compat_immediate_primary_key(rel);
	Relation	index;
	char	   *shard_key = NULL;

	if (!OidIsValid(pkindex))
		return NULL;
	index = index_open(pkindex, AccessShareLock);
	if (index->rd_index->indnatts == 2 && index->rd_index->indkey.values[0] > 0 &&
		index->rd_index->indkey.values[1] == get_attnum(RelationGetRelid(rel), "message_id"))
		shard_key = get_attname(RelationGetRelid(rel), index->rd_index->indkey.values[0], false);
	index_close(index, AccessShareLock);
	return shard_key;
}

/*
 * Does the table carry the marker create_sharded_inbox puts on it: a CHECK
 * constraint named idempotent_inbox, which Citus copies to every node?
 */
bool
inbox_shape_has_marker(Relation rel)
{
	ConstrCheck *checks = rel->rd_att->constr ? rel->rd_att->constr->check : NULL;
	int			n = rel->rd_att->constr ? rel->rd_att->constr->num_check : 0;

	for (int i = 0; i < n; i++)
		if (strcmp(checks[i].ccname, INBOX_MARKER) == 0)
			return true;
	return false;
}

/*
 * The retention a sharded inbox's window marker carries (INBOX_WINDOW_MARKER),
 * for a worker of a Citus cluster, which has no registry row for the inbox: true
 * and the window in *window when the table has one of that form.  set_retention
 * writes it with the registry row, so it is the registry's window.
 */
bool
inbox_shape_marked_window(Relation rel, Interval *window)
{
	ConstrCheck *checks = rel->rd_att->constr ? rel->rd_att->constr->check : NULL;
	int			n = rel->rd_att->constr ? rel->rd_att->constr->num_check : 0;

	for (int i = 0; i < n; i++)
	{
		Node	   *expr;
		Const	   *value;
		Interval	zero;

		if (strcmp(checks[i].ccname, INBOX_WINDOW_MARKER) != 0)
			continue;
		expr = stringToNode(checks[i].ccbin);
		if (!IsA(expr, NullTest) || ((NullTest *) expr)->nulltesttype != IS_NOT_NULL ||
			!IsA(((NullTest *) expr)->arg, Const))
			return false;
		value = (Const *) ((NullTest *) expr)->arg;
		if (value->consttype != INTERVALOID || value->constisnull)
			return false;
		*window = *DatumGetIntervalP(value->constvalue);
		/* Only a window set_retention could have written: positive. */
		memset(&zero, 0, sizeof(zero));
		return DatumGetBool(DirectFunctionCall2(interval_gt, IntervalPGetDatum(window),
												IntervalPGetDatum(&zero)));
	}
	return false;
}

/* The shard key column, of any type; sets shard_type. */
static AttrNumber
shard_column(Relation rel, const char *name, Oid *type, char **problem)
{
	AttrNumber	attnum = get_attnum(RelationGetRelid(rel), name);
	Form_pg_attribute att;

	if (*problem != NULL)
		return InvalidAttrNumber;
	if (attnum <= 0)
	{
		*problem = psprintf("Its shard key column \"%s\" is missing.", name);
		return InvalidAttrNumber;
	}
	att = TupleDescAttr(RelationGetDescr(rel), attnum - 1);
	if (!collation_ok(att->attcollation))
		*problem = psprintf("Column \"%s\" has a nondeterministic collation.", name);
	*type = att->atttypid;
	return attnum;
}

/*
 * Fill the table facts of an entry (pkindex, key_eq, key_attnum, columns and the
 * shard key's) from rel, whose registered key type is inbox->keytype and shard
 * key shard_key (NULL: none).  Returns NULL, or what is wrong, as a sentence for
 * inbox_shape_error.  shard_column is allocated in the current context.
 */
char *
inbox_shape_problem(Relation rel, InboxInfo *inbox, const char *shard_key)
{
	char	   *problem = NULL;

	if (rel->rd_rel->relkind != RELKIND_RELATION)
		return "It is no longer an ordinary table.";
	if (rel->rd_rel->relpersistence != RELPERSISTENCE_PERMANENT)
		return "It is unlogged or temporary: claims would not survive a crash.";

	inbox->key_attnum = column_of_type(rel, "message_id", inbox->keytype, true, &problem);
	for (int c = 0; c < INBOX_NUM_COLUMNS; c++)
		inbox->columns[c] = column_of_type(rel, inbox_sql_column_names[c], column_types[c],
										   c == COL_CLAIMED_AT, &problem);
	if (shard_key != NULL)
	{
		inbox->shard_attnum = shard_column(rel, shard_key, &inbox->shard_type, &problem);
		inbox->shard_column = pstrdup(quote_identifier(shard_key));
		if (problem == NULL && !inbox_shape_has_marker(rel))
			problem = "Its constraint \"" INBOX_MARKER "\" is missing: Citus workers would not know it is an inbox.";
	}
	inbox->pkindex = check_primary_key(rel, inbox, &problem);
	return problem;
}

/* Is the default of attribute attnum exactly now()? */
static bool
default_is_now(Relation rel, AttrNumber attnum)
{
	Node	   *expr = build_column_default(rel, attnum);

	return expr != NULL && IsA(expr, FuncExpr) &&
		((FuncExpr *) expr)->funcid == F_NOW && ((FuncExpr *) expr)->args == NIL;
}

/*
 * May claims of this inbox skip the executor?  They fill message_id and
 * claimed_at, the latter with what its default would give: so the default must
 * be now(), and everything else direct_access_possible asks.
 */
bool
inbox_shape_direct_ok(Relation rel, const InboxInfo *inbox)
{
	AttrNumber	filled[2] = {inbox->key_attnum, inbox->columns[COL_CLAIMED_AT]};
	Form_pg_attribute key = TupleDescAttr(RelationGetDescr(rel), inbox->key_attnum - 1);
	Form_pg_attribute claimed_at =
		TupleDescAttr(RelationGetDescr(rel), inbox->columns[COL_CLAIMED_AT] - 1);

	if (key->attidentity || key->attgenerated || claimed_at->attgenerated ||
		!claimed_at->atthasdef || !default_is_now(rel, claimed_at->attnum))
		return false;
	return direct_access_possible(rel, filled, 2) &&
		direct_access_sole_arbiter(rel, inbox->pkindex);
}
