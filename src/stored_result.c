/*
 * stored_result.c
 *		complete and result: keep the answer of a first delivery with its claim, so
 *		that a duplicate can replay it instead of answering "already done".
 *
 * complete is for claims made in the same transaction as the effect (claim,
 * claim_apply, claim_many): the result commits with them or not at all.  A key
 * held by a lease is finished with its token instead (lease.c), which is checked.
 */
#include "postgres.h"

#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/timestamp.h"

#include "inbox_info.h"
#include "claim_routed.h"
#include "claim_row.h"
#include "inbox_sql.h"
#include "message_id.h"
#include "registry.h"
#include "signature.h"
#include "spi_util.h"

PG_FUNCTION_INFO_V1(inbox_complete);
Datum
inbox_complete(PG_FUNCTION_ARGS)
{
	const CallSignature *sig = signature_of_call(fcinfo);
	InboxInfo  *inbox = registry_lookup(fcinfo, 0, RowExclusiveLock, ACL_SELECT | ACL_UPDATE);
	int			argno = sig->keyargno;
	Datum		shard_value;
	const Datum *shard = claim_routed_shard_arg(fcinfo, sig, inbox, &shard_value);
	Datum		id = message_id_from_arg(fcinfo, argno, sig->keytype, inbox);
	Jsonb	   *result = PG_ARGISNULL(argno + 1) ? NULL : PG_GETARG_JSONB_P(argno + 1);
	Datum		values[2] = {id, PointerGetDatum(result)};
	char		nulls[2] = {' ', result ? ' ' : 'n'};
	ClaimRow	row;
	bool		present = true;

	registry_check_stored_reads(fcinfo, inbox);

	/* An expired claim counts as absent, as everywhere: nothing to complete. */
	if (inbox->has_retention)
	{
		claim_row_read_key(inbox, id, shard, true, &row);
		present = row.state == ROW_PRESENT &&
			!claim_row_expired(inbox, &row, GetCurrentTimestamp());
	}
	if (present)
	{
		int			stored;

		spi_connect();
		stored = inbox_sql_execute_key(inbox, SQL_COMPLETE, shard, values, nulls);
		SPI_finish();
		if (stored == 1)
			PG_RETURN_VOID();
	}

	claim_row_read_key(inbox, id, shard, true, &row);
	if (row.state == ROW_PRESENT && (row.leased || row.has_token))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("message id \"%s\" is held by a lease",
						message_id_to_cstring(inbox, id)),
				 errdetail("A lease's result is stored once, by inbox.finish() with its token."),
				 errhint("Store the result with inbox.finish() and the lease's token.")));
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("message id \"%s\" is not claimed in inbox \"%s\"",
					message_id_to_cstring(inbox, id), get_rel_name(inbox->relid)),
			 errhint("Claim it first, in the same transaction.")));
	PG_RETURN_VOID();			/* not reached */
}

/*
 * The stored result as this transaction's snapshot sees it; NULL when the id is
 * not claimed, its claim has expired, or no result was stored.
 */
PG_FUNCTION_INFO_V1(inbox_result);
Datum
inbox_result(PG_FUNCTION_ARGS)
{
	const CallSignature *sig = signature_of_call(fcinfo);
	InboxInfo  *inbox = registry_lookup(fcinfo, 0, AccessShareLock, ACL_SELECT);
	Datum		shard_value;
	const Datum *shard = claim_routed_shard_arg(fcinfo, sig, inbox, &shard_value);
	Datum		id = message_id_from_arg(fcinfo, sig->keyargno, sig->keytype, inbox);
	Jsonb	   *result = NULL;

	spi_connect();
	if (inbox_sql_execute_key(inbox, SQL_RESULT, shard, &id, NULL) == 1)
	{
		HeapTuple	tuple = SPI_tuptable->vals[0];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		bool		result_null;
		bool		lease_null;
		bool		ignored;
		Datum		value = SPI_getbinval(tuple, desc, 1, &result_null);
		ClaimRow	row;

		memset(&row, 0, sizeof(row));
		row.claimed_at = DatumGetTimestampTz(SPI_getbinval(tuple, desc, 2, &ignored));
		row.lease_until = DatumGetTimestampTz(SPI_getbinval(tuple, desc, 3, &lease_null));
		row.leased = !lease_null;
		if (!result_null && !claim_row_expired(inbox, &row, GetCurrentTimestamp()))
		{
			Jsonb	   *stored = DatumGetJsonbP(value);

			result = SPI_palloc(VARSIZE(stored));
			memcpy(result, stored, VARSIZE(stored));
		}
	}
	SPI_finish();

	if (result == NULL)
		PG_RETURN_NULL();
	PG_RETURN_JSONB_P(result);
}
