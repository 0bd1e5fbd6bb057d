/*
 * claim_apply.c
 *		claim_apply: claim a message id and, on first delivery only, run the effect
 *		statement in the same transaction.
 *
 * The arguments after the statement become $1..$n.  They arrive in one of three
 * shapes, fixed by which overload the parser chose:
 *	- spread VARIADIC "any" values, each with its own type;
 *	- VARIADIC "any" called with an explicit VARIADIC array: the elements;
 *	- VARIADIC text[], chosen when every argument is an untyped driver parameter
 *	  (which "any" cannot accept).
 * An untyped literal, and any value given as text or varchar, is treated like a
 * literal: it takes the type its $n has in the statement and is converted by that
 * type's input function.  Drivers and ORMs send strings for everything from
 * numbers to jsonb, and this is what makes them work unchanged.  Values of other
 * types keep their type.
 *
 * The statement is prepared (or found in the cache) and its arguments converted
 * before the claim, so a broken statement or value fails on a duplicate too
 * instead of hiding until the next fresh id.
 * Any error in the statement aborts the transaction, claim included.
 *
 * claim_apply_many does the same for a batch, with one run of a set-based
 * statement over the fresh messages only: see claim_apply_many_common.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "funcapi.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/tuplestore.h"

#include "inbox_info.h"
#include "claim.h"
#include "claim_routed.h"
#include "message_id.h"
#include "registry.h"
#include "signature.h"
#include "spi_util.h"
#include "statement_cache.h"

/*
 * The statement is the argument after the message id; the _sharded forms take a
 * shard key before the id, which moves both one place on.
 */
#define STATEMENT_ARG(sig)		((sig)->keyargno + 1)
#define FIRST_VALUE_ARG(sig)	((sig)->keyargno + 2)

typedef struct StatementArgs
{
	int			nargs;
	Datum	   *values;
	char	   *nulls;			/* ' ' or 'n', as SPI wants */
	Oid		   *types;			/* UNKNOWNOID for values given as C strings */
} StatementArgs;

static void
args_alloc(StatementArgs *args, int n)
{
	args->nargs = n;
	args->values = palloc0(sizeof(Datum) * Max(n, 1));
	args->nulls = palloc(sizeof(char) * Max(n, 1));
	args->types = palloc(sizeof(Oid) * Max(n, 1));
}

/* Strings are bound like literals; see the header comment. */
static bool
is_string_type(Oid type)
{
	return type == TEXTOID || type == VARCHAROID || type == UNKNOWNOID;
}

/* One argument as a C string to convert, or as a typed value. */
static void
args_set(StatementArgs *args, int i, Oid type, Datum value, bool isnull)
{
	args->nulls[i] = isnull ? 'n' : ' ';
	args->types[i] = is_string_type(type) ? UNKNOWNOID : type;
	if (isnull)
		args->values[i] = (Datum) 0;
	else if (type == UNKNOWNOID)
		args->values[i] = value;	/* already a C string */
	else if (is_string_type(type))
		args->values[i] = CStringGetDatum(TextDatumGetCString(value));
	else
		args->values[i] = value;
}

/* The elements of a variadic array. */
static void
args_from_array(StatementArgs *args, FunctionCallInfo fcinfo, int first)
{
	ArrayType  *array;
	Oid			elemtype;
	int16		typlen;
	bool		typbyval;
	char		typalign;
	Datum	   *elems;
	bool	   *elemnulls;
	int			n;

	/* VARIADIC NULL means no arguments, as for format(). */
	if (PG_ARGISNULL(first))
	{
		args_alloc(args, 0);
		return;
	}

	array = PG_GETARG_ARRAYTYPE_P(first);
	elemtype = ARR_ELEMTYPE(array);
	get_typlenbyvalalign(elemtype, &typlen, &typbyval, &typalign);
	deconstruct_array(array, elemtype, typlen, typbyval, typalign, &elems, &elemnulls, &n);

	args_alloc(args, n);
	for (int i = 0; i < n; i++)
		args_set(args, i, elemtype, elems[i], elemnulls[i]);
}

/* Spread "any" arguments, each with the type the parser gave it. */
static void
args_from_spread(StatementArgs *args, FunctionCallInfo fcinfo, int first)
{
	args_alloc(args, PG_NARGS() - first);
	for (int i = 0; i < args->nargs; i++)
	{
		int			argno = first + i;
		Oid			type = get_fn_expr_argtype(fcinfo->flinfo, argno);

		if (!OidIsValid(type))
			elog(ERROR, "could not determine the type of argument %d", argno + 1);
		args_set(args, i, type, PG_ARGISNULL(argno) ? (Datum) 0 : PG_GETARG_DATUM(argno),
				 PG_ARGISNULL(argno));
	}
}

static void
statement_args(StatementArgs *args, FunctionCallInfo fcinfo, const CallSignature *sig)
{
	if (PG_NARGS() <= FIRST_VALUE_ARG(sig))
		args_alloc(args, 0);
	else if (sig->variadic_type == TEXTOID || get_fn_expr_variadic(fcinfo->flinfo))
		args_from_array(args, fcinfo, FIRST_VALUE_ARG(sig));
	else
		args_from_spread(args, fcinfo, FIRST_VALUE_ARG(sig));
}

/* The statement is what the effect is: it must be there. */
static const char *
statement_source(FunctionCallInfo fcinfo, const CallSignature *sig)
{
	if (PG_ARGISNULL(STATEMENT_ARG(sig)))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("statement must not be null")));
	return text_to_cstring(PG_GETARG_TEXT_PP(STATEMENT_ARG(sig)));
}

/*
 * Claim, and on a first delivery run the statement.  The statement arrives
 * pinned from the cache and stays pinned throughout, and is unpinned here
 * whatever happens: triggers fired by the claim or by the statement may run
 * claim_apply and evict plans, never this one.
 */
static bool
claim_then_apply(InboxInfo *inbox, Datum id, const Datum *shard_key, StatementPlan *statement,
				 StatementArgs *args)
{
	volatile bool claimed = false;

	PG_TRY();
	{
		statement_cache_convert_args(statement, args->values, args->nulls);
		claimed = shard_key ? claim_routed(inbox, id, shard_key) : claim_one(inbox, id, NULL);
		if (claimed)
			statement_cache_execute(statement, args->values, args->nulls);
	}
	PG_FINALLY();
	{
		statement_cache_unpin(statement);
	}
	PG_END_TRY();
	return claimed;
}

/* claim_apply and claim_apply_sharded, which takes the shard key value second. */
static Datum
claim_apply_common(FunctionCallInfo fcinfo, bool sharded)
{
	const CallSignature *sig = signature_of_call(fcinfo);
	InboxInfo  *inbox = registry_lookup(fcinfo, 0, RowExclusiveLock, ACL_INSERT | ACL_SELECT);
	Datum		shard_key = (Datum) 0;
	const Datum *shard = NULL;
	Datum		id;
	const char *source;
	StatementArgs args;
	StatementPlan *statement;
	bool		claimed;
	bool		quarantined;

	/* (message_id_from_arg checks the plain form.) */
	if (sharded)
	{
		registry_check_shard_form(fcinfo, inbox, true);
		shard_key = claim_routed_shard_key(fcinfo, 1, inbox);
		shard = &shard_key;
	}
	id = message_id_from_arg(fcinfo, sig->keyargno, sig->keytype, inbox);
	source = statement_source(fcinfo, sig);
	statement_args(&args, fcinfo, sig);

	spi_connect();
	statement = statement_cache_get(source, args.nargs, args.types);
	claimed = claim_then_apply(inbox, id, shard, statement, &args);
	SPI_finish();
	quarantined = !claimed && claim_quarantined_after_claim(inbox, id, shard);

	/*
	 * The statement, or another session meanwhile, may have dropped the
	 * extension, outcome type included: take in the news before answering with
	 * a value of that type (signature_enum_label reports it, 55000).
	 */
	AcceptInvalidationMessages();
	PG_RETURN_DATUM(signature_enum_label(sig->rettype, claimed ? "applied" :
										 quarantined ? "quarantined" : "duplicate"));
}

PG_FUNCTION_INFO_V1(inbox_claim_apply);
Datum
inbox_claim_apply(PG_FUNCTION_ARGS)
{
	return claim_apply_common(fcinfo, false);
}

PG_FUNCTION_INFO_V1(inbox_claim_apply_sharded);
Datum
inbox_claim_apply_sharded(PG_FUNCTION_ARGS)
{
	return claim_apply_common(fcinfo, true);
}

/*
 * claim_apply_many: a consumer's whole poll in one call.  Every id of the batch is
 * claimed (in key order, as claim_many does, so overlapping batches cannot
 * deadlock), and the statement runs once, and only if some id was fresh, with
 * $1 the fresh ids (an array of the inbox's key type, in input order, each once)
 * and $2.. the caller's arrays cut down to the same positions: each message's
 * values stay beside its id, and a repeat inside the batch or a replay of an
 * earlier batch reaches the statement not at all.  The statement reads them with
 * unnest($1, $2, ...), and should aggregate what it writes per row, as a
 * hand-written batch must (UPDATE ... FROM updates a row once however many
 * messages join it).
 */

/*
 * The caller's value arrays, after conversion: one element per id, one dimension.
 * function: the name the errors give.
 */
static void
check_value_arrays(StatementPlan *statement, const StatementArgs *args, int nids,
				   const char *function)
{
	for (int i = 1; i < args->nargs; i++)
	{
		Oid			type = statement_cache_param_type(statement, i);
		ArrayType  *array;
		int			n;

		if (!OidIsValid(get_element_type(type)))
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("argument %d of %s must be an array, not type %s",
							i, function, format_type_be(type)),
					 errdetail("Each value argument is an array with one element per message id, read by the statement as $%d.",
							   i + 1),
					 errhint("Pass an array, and cast $%d in the statement if its type is not clear there, as in unnest($1, $%d::numeric[]).",
							 i + 1, i + 1)));
		if (args->nulls[i] == 'n')
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("argument %d of %s must not be null", i, function),
					 errhint("Pass an array of nulls for values that are missing.")));
		array = DatumGetArrayTypeP(args->values[i]);
		n = ArrayGetNItems(ARR_NDIM(array), ARR_DIMS(array));
		if (ARR_NDIM(array) > 1)
			ereport(ERROR,
					(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
					 errmsg("argument %d of %s must be a one-dimensional array", i, function)));
		if (n != nids)
			ereport(ERROR,
					(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
					 errmsg("argument %d of %s has %d elements, not one per message id",
							i, function, n),
					 errdetail_plural("The batch has %d message id.", "The batch has %d message ids.",
									  nids, nids),
					 errhint("Pass one value per message id, in the same order, as a one-dimensional array.")));
	}
}

/* The elements of array at the positions keep marks, as a new one-dimensional array. */
static Datum
array_cut(Datum value, const bool *keep, int nkept)
{
	ArrayType  *array = DatumGetArrayTypeP(value);
	Oid			elemtype = ARR_ELEMTYPE(array);
	int16		typlen;
	bool		typbyval;
	char		typalign;
	Datum	   *elems;
	bool	   *nulls;
	int			n;
	int			k = 0;
	int			dims[1];
	int			lbs[1] = {1};

	get_typlenbyvalalign(elemtype, &typlen, &typbyval, &typalign);
	deconstruct_array(array, elemtype, typlen, typbyval, typalign, &elems, &nulls, &n);
	for (int i = 0; i < n; i++)
		if (keep[i])
		{
			elems[k] = elems[i];
			nulls[k] = nulls[i];
			k++;
		}
	Assert(k == nkept);
	dims[0] = k;
	return PointerGetDatum(construct_md_array(elems, nulls, 1, dims, lbs, elemtype, typlen,
											  typbyval, typalign));
}

/*
 * $1 is the fresh ids, an array of the inbox's key type, set once the batch is
 * claimed; the caller's values move one on.
 */
static void
args_prepend_ids(StatementArgs *args, InboxInfo *inbox)
{
	StatementArgs values = *args;

	args_alloc(args, values.nargs + 1);
	args->types[0] = get_array_type(inbox->keytype);
	args->nulls[0] = ' ';
	for (int i = 0; i < values.nargs; i++)
	{
		args->types[i + 1] = values.types[i];
		args->values[i + 1] = values.values[i];
		args->nulls[i + 1] = values.nulls[i];
	}
}

/*
 * Claim the batch and, if any id was fresh, run the statement over the fresh
 * ones.  shard_key: the value of every id of the batch in a sharded inbox, else
 * NULL.
 */
static void
claim_batch_then_apply(InboxInfo *inbox, ClaimBatch *batch, const Datum *shard_key,
					   StatementPlan *statement, StatementArgs *args)
{
	PG_TRY();
	{
		int			nfresh = 0;

		statement_cache_convert_args(statement, args->values, args->nulls);
		check_value_arrays(statement, args, batch->nids,
						   shard_key ? "claim_apply_many_sharded" : "claim_apply_many");
		claim_batch_claim(batch, inbox, shard_key);
		/* Asked before the statement runs, which may drop the inbox. */
		for (int i = 0; i < batch->nids; i++)
		{
			nfresh += batch->fresh[i];
			batch->quarantined[i] = !batch->fresh[i] &&
				claim_quarantined(inbox, batch->keys[i], shard_key);
		}
		if (nfresh > 0)
		{
			args->values[0] = PointerGetDatum(claim_batch_fresh_keys(batch, inbox));
			for (int i = 1; i < args->nargs; i++)
				args->values[i] = array_cut(args->values[i], batch->fresh, nfresh);
			statement_cache_execute(statement, args->values, args->nulls);
		}
	}
	PG_FINALLY();
	{
		statement_cache_unpin(statement);
	}
	PG_END_TRY();
}

/*
 * The result's row type, read from the function's declaration before the
 * statement runs: the statement may drop the extension, function included.
 */
static TupleDesc
claim_apply_many_result_type(FunctionCallInfo fcinfo)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	MemoryContext oldcxt = MemoryContextSwitchTo(rsinfo->econtext->ecxt_per_query_memory);
	TupleDesc	tupdesc;

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "claim_apply_many must be declared to return a set of rows");
	tupdesc = BlessTupleDesc(CreateTupleDescCopy(tupdesc));
	MemoryContextSwitchTo(oldcxt);
	return tupdesc;
}

/* One row per id of the batch, in input order: the id as given, applied or duplicate. */
static void
claim_apply_many_report(FunctionCallInfo fcinfo, TupleDesc tupdesc, const ClaimBatch *batch)
{
	/* 55000 if the statement dropped the extension, outcome type included. */
	Datum		applied = signature_enum_label(TupleDescAttr(tupdesc, 1)->atttypid, "applied");
	Datum		duplicate = signature_enum_label(TupleDescAttr(tupdesc, 1)->atttypid, "duplicate");
	Datum		quarantined = signature_enum_label(TupleDescAttr(tupdesc, 1)->atttypid, "quarantined");
	Tuplestorestate *store = claim_result_store((ReturnSetInfo *) fcinfo->resultinfo, tupdesc);

	for (int i = 0; i < batch->nids; i++)
	{
		Datum		values[2] = {batch->given[i],
			batch->fresh[i] ? applied :
		batch->quarantined[i] ? quarantined : duplicate};
		bool		nulls[2] = {false, false};

		tuplestore_putvalues(store, tupdesc, values, nulls);
	}
}

/*
 * claim_apply_many, and claim_apply_many_sharded for a poll whose messages share
 * a shard key value, which it takes before the ids: the batch's claims are then
 * one statement Citus routes to one shard, and with the statement's writes on
 * co-located rows, all of it runs on one worker in a delegated function.
 */
PG_FUNCTION_INFO_V1(inbox_claim_apply_many);
Datum
inbox_claim_apply_many(PG_FUNCTION_ARGS)
{
	const CallSignature *sig = signature_of_call(fcinfo);
	InboxInfo  *inbox = registry_lookup(fcinfo, 0, RowExclusiveLock, ACL_INSERT | ACL_SELECT);
	Datum		shard_value;
	const Datum *shard;
	ClaimBatch	batch;
	const char *source;
	StatementArgs args;
	StatementPlan *statement;
	TupleDesc	tupdesc;

	claim_check_set_context(fcinfo, sig->keyargno == 2 ? "claim_apply_many_sharded" :
							"claim_apply_many");
	tupdesc = claim_apply_many_result_type(fcinfo);
	shard = claim_routed_shard_arg(fcinfo, sig, inbox, &shard_value);
	claim_batch_read(&batch, fcinfo, sig, inbox);
	source = statement_source(fcinfo, sig);
	statement_args(&args, fcinfo, sig);
	args_prepend_ids(&args, inbox);

	spi_connect();
	statement = statement_cache_get_batch(source, args.nargs, args.types);
	claim_batch_then_apply(inbox, &batch, shard, statement, &args);
	SPI_finish();

	/* As claim_apply: the statement may have dropped the extension. */
	AcceptInvalidationMessages();
	claim_apply_many_report(fcinfo, tupdesc, &batch);
	return (Datum) 0;
}
