/*
 * claim_routed.c
 *		Claims of a routed inbox: one statement each, with nothing read before it.
 *
 * Two kinds of inbox cannot use the paths of claim.c, which read and write the
 * inbox's own storage and its one-column primary key:
 *	- a Citus table (citus_tables.c): on the coordinator and the workers alike
 *	  the table is an empty shell and its rows live in shards;
 *	- an inbox with a shard key (create_sharded_inbox), whose claims are keyed
 *	  by (shard key, message_id) so that Citus can keep them on the node of the
 *	  rows their effects write.
 * Their claims are each a single INSERT ... ON CONFLICT that Citus can send,
 * whole, to the shard that holds the id, and that decides by itself:
 *	- a conflict with a live claim is a duplicate, and writes nothing;
 *	- with a retention window, an expired claim is renewed in place (DO UPDATE
 *	  ... WHERE expired), which is a fresh claim;
 *	- waits for another transaction's claim of the same id, ROLLBACK, and
 *	  serialization failures are the INSERT's own, as in claim.c.
 * A BEFORE INSERT trigger that skipped the row is told from a duplicate by
 * asking whether the id is claimed (SQL_EXISTS), again in one statement.
 *
 * On a Citus worker the retention window is not known (registry.c, marked_row):
 * there a claim counts until purge deletes it.
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "nodes/makefuncs.h"
#include "optimizer/optimizer.h"
#include "parser/parse_coerce.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/typcache.h"

#include "inbox_info.h"
#include "claim_routed.h"
#include "claim_row.h"
#include "inbox_sql.h"
#include "message_id.h"
#include "registry.h"
#include "retention.h"
#include "signature.h"
#include "stats.h"

/*
 * An assignment cast may round (7.5 to a bigint 8) or cut (a timestamp to a
 * date): the claim would then be made for another shard key value, and a fresh
 * message answered duplicate.  So the value is cast back and must come back
 * equal, where the given type has a cast back and an equality.
 */
static void
check_cast_exact(const InboxInfo *inbox, Oid argtype, Datum given, const Const *cast)
{
	TypeCacheEntry *typentry = lookup_type_cache(argtype, TYPECACHE_EQ_OPR_FINFO);
	Node	   *back;
	Const	   *returned;

	if (!OidIsValid(typentry->eq_opr_finfo.fn_oid))
		return;
	back = coerce_to_target_type(NULL, (Node *) copyObject(cast), inbox->shard_type, argtype,
								 -1, COERCION_EXPLICIT, COERCE_IMPLICIT_CAST, -1);
	if (back == NULL)
		return;
	returned = (Const *) evaluate_expr((Expr *) back, argtype, -1, typentry->typcollation);
	if (returned->constisnull ||
		!DatumGetBool(FunctionCall2Coll(&typentry->eq_opr_finfo, typentry->typcollation,
										returned->constvalue, given)))
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("shard key value does not fit type %s exactly",
						format_type_be(inbox->shard_type)),
				 errdetail("The %s given would be claimed as another value of inbox \"%s\"'s shard key.",
						   format_type_be(argtype), get_rel_name(inbox->relid)),
				 errhint("Pass a value of type %s.", format_type_be(inbox->shard_type))));
}

/*
 * A shard key value of type argtype as a value of the shard key's type.
 * Strings are read like literals of that type (drivers send numbers and uuids
 * as strings), other values take an assignment cast, as an INSERT of them into
 * the column would.
 */
Datum
claim_routed_shard_value(const InboxInfo *inbox, Oid argtype, Datum value)
{
	Node	   *coerced;
	Const	   *result;
	int16		typlen;
	bool		typbyval;

	if (argtype == inbox->shard_type)
		return value;

	if (argtype == UNKNOWNOID || argtype == TEXTOID || argtype == VARCHAROID)
	{
		Oid			input;
		Oid			ioparam;
		char	   *string = argtype == UNKNOWNOID ? DatumGetCString(value) :
			TextDatumGetCString(value);

		getTypeInputInfo(inbox->shard_type, &input, &ioparam);
		return OidInputFunctionCall(input, string, ioparam, -1);
	}

	get_typlenbyval(argtype, &typlen, &typbyval);
	coerced = coerce_to_target_type(NULL,
									(Node *) makeConst(argtype, -1, get_typcollation(argtype),
													   typlen, value, false, typbyval),
									argtype, inbox->shard_type, -1, COERCION_ASSIGNMENT,
									COERCE_IMPLICIT_CAST, -1);
	if (coerced == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("shard key of inbox \"%s\" is of type %s, not %s",
						get_rel_name(inbox->relid), format_type_be(inbox->shard_type),
						format_type_be(argtype)),
				 errhint("Cast the value to %s.", format_type_be(inbox->shard_type))));
	result = (Const *) evaluate_expr((Expr *) coerced, inbox->shard_type, -1,
									 get_typcollation(inbox->shard_type));
	if (result->constisnull)
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("shard key must not be null")));
	check_cast_exact(inbox, argtype, value, result);
	return result->constvalue;
}

/* The shard key value given as argument argno, as claim_routed_shard_value reads it. */
Datum
claim_routed_shard_key(FunctionCallInfo fcinfo, int argno, const InboxInfo *inbox)
{
	Oid			argtype = get_fn_expr_argtype(fcinfo->flinfo, argno);

	if (PG_ARGISNULL(argno))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("shard key must not be null")));
	if (!OidIsValid(argtype))
		ereport(ERROR,
				(errcode(ERRCODE_INDETERMINATE_DATATYPE),
				 errmsg("could not determine the type of the shard key"),
				 errhint("Cast it to %s.", format_type_be(inbox->shard_type))));
	return claim_routed_shard_value(inbox, argtype, PG_GETARG_DATUM(argno));
}

/*
 * The shard key of a call of a function that has a _sharded form (which takes
 * it second, before the id): a pointer to it in *value, or NULL for the plain
 * form.  Either form must fit the inbox (registry_check_shard_form).
 */
const Datum *
claim_routed_shard_arg(FunctionCallInfo fcinfo, const CallSignature *sig,
					   const InboxInfo *inbox, Datum *value)
{
	bool		sharded_call = sig->keyargno == 2;

	registry_check_shard_form(fcinfo, inbox, sharded_call);
	if (!sharded_call)
		return NULL;
	*value = claim_routed_shard_key(fcinfo, 1, inbox);
	return value;
}

/* Checks that the callers did: a sharded inbox is claimed with its shard key only. */
static void
check_shard_given(const InboxInfo *inbox, const Datum *shard_key)
{
	if ((inbox->shard_attnum != InvalidAttrNumber) != (shard_key != NULL))
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("inbox \"%s\" %s", get_rel_name(inbox->relid),
						shard_key ? "has no shard key" : "is sharded"),
				 errhint("Use the claim functions whose names end in _sharded for sharded inboxes, and only for them.")));
}

/*
 * Is the id held by a claim, committed or of this transaction?  In an inbox with
 * a retention window, by one that has not expired at now, the time the claim
 * itself judged by.  Asked when a claim wrote nothing: if nothing holds the id
 * either, a trigger skipped the write (claim_routed_skipped).
 */
bool
claim_routed_held(InboxInfo *inbox, Datum message_id, const Datum *shard_key, TimestampTz now)
{
	Datum		values[4] = {message_id};

	check_shard_given(inbox, shard_key);
	if (!inbox->has_retention)
	{
		values[1] = shard_key ? *shard_key : (Datum) 0;
		return inbox_sql_execute(inbox, shard_key ? SQL_SHARDED_EXISTS : SQL_EXISTS,
								 values, NULL) > 0;
	}
	values[1] = TimestampTzGetDatum(retention_cutoff(inbox, now));
	values[2] = TimestampTzGetDatum(now);
	values[3] = shard_key ? *shard_key : (Datum) 0;
	return inbox_sql_execute(inbox, shard_key ? SQL_SHARDED_HELD : SQL_HELD, values, NULL) > 0;
}

/*
 * May a trigger have skipped a claim's write?  A BEFORE INSERT one may skip the
 * new claim, a BEFORE UPDATE one the renewal of an expired claim.
 */
bool
claim_routed_may_skip(const InboxInfo *inbox)
{
	return inbox->insert_triggers || (inbox->has_retention && inbox->update_triggers);
}

/*
 * Claim one id of a routed inbox; true when this call wrote the claim.  SPI
 * must be connected.  shard_key is NULL for an inbox without one.
 */
bool
claim_routed(InboxInfo *inbox, Datum message_id, const Datum *shard_key)
{
	Datum		values[5];
	InboxStatement which;
	int			nvalues;
	uint64		stored;
	bool		claimed;
	TimestampTz now = inbox->has_retention ? GetCurrentTimestamp() : 0;	/* judges expiry only */

	check_shard_given(inbox, shard_key);
	values[0] = message_id;
	if (inbox->has_retention)
	{
		registry_check_window_rights(inbox);
		values[1] = TimestampTzGetDatum(retention_cutoff(inbox, now));
		values[2] = TimestampTzGetDatum(now);
		values[3] = TimestampTzGetDatum(GetCurrentTransactionStartTimestamp());	/* now() */
		nvalues = 4;
		which = shard_key ? SQL_SHARDED_CLAIM_WINDOW : SQL_CLAIM_WINDOW;
	}
	else
	{
		nvalues = 1;
		which = shard_key ? SQL_SHARDED_CLAIM : SQL_CLAIM;
	}
	if (shard_key)
		values[nvalues++] = *shard_key;

	stored = inbox_sql_execute(inbox, which, values, NULL);
	if (stored == 1)
	{
		claim_row_check_written(inbox, message_id);
		if (shard_key)
			claim_row_check_shard(inbox, SPI_tuptable->vals[0], SPI_tuptable->tupdesc,
									 message_id, *shard_key);
		claimed = true;
	}
	else
	{
		if (claim_routed_may_skip(inbox) && !claim_routed_held(inbox, message_id, shard_key, now))
			claim_row_suppressed(inbox, message_id);
		claimed = false;
	}
	stats_count(inbox, claimed ? COUNT_CLAIMS : COUNT_DUPLICATES, 1);
	return claimed;
}
