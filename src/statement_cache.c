/*
 * statement_cache.c
 *		The statements of claim_apply: parameter type inference, and a bounded
 *		per-backend cache of their kept plans.
 *
 * An argument's type is either known (a typed value) or to be inferred (a string,
 * passed here as UNKNOWNOID).  Known types are fixed
 * for the parse; the others take the type their $n gets from the statement's
 * context, as they would in PREPARE, and fall back to text where the context says
 * nothing.  Values of inferred arguments arrive as C strings and go through the
 * type's input function, exactly like a literal would.
 *
 * Entries are keyed by the statement text and the argument types, bounded by
 * idempotent_inbox.statement_cache_size and evicted least recently used first.  An
 * entry whose plan is running (a statement that itself calls claim_apply) is
 * pinned and never evicted under it.  The plancache re-plans kept plans when the
 * objects they use change, and re-checks privileges on every execution, so a
 * cached plan always runs with the caller's current rights.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "common/hashfn.h"
#include "lib/ilist.h"
#include "nodes/nodeFuncs.h"
#include "parser/analyze.h"
#include "tcop/tcopprot.h"
#include "utils/guc.h"
#include "utils/hsearch.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"

#include "compat.h"
#include "inbox.h"

struct StatementPlan
{
	uint64		key;			/* hash of text and argument types; HTAB key */
	MemoryContext cxt;			/* owns everything below but the plan */
	char	   *source;
	int			nargs;
	Oid		   *argtypes;		/* as given; UNKNOWNOID where inferred */
	Oid		   *paramtypes;		/* as resolved */
	FmgrInfo   *inputs;			/* input functions of inferred arguments */
	Oid		   *ioparams;
	SPIPlanPtr	plan;
	int			pins;			/* executions under way */
	dlist_node	lru;			/* head is most recently used */
};

static int	statement_cache_size = 256;
static HTAB *StatementCache = NULL;
static dlist_head StatementLru = DLIST_STATIC_INIT(StatementLru);
static int	StatementCount = 0;

void
statement_cache_init(void)
{
	HASHCTL		ctl;

	DefineCustomIntVariable("idempotent_inbox.statement_cache_size",
							"Maximum number of claim_apply statements whose plans a backend keeps.",
							"Least recently used plans are freed beyond this number.",
							&statement_cache_size,
							256, 1, 65536,
							PGC_USERSET, 0,
							NULL, NULL, NULL);

	ctl.keysize = sizeof(uint64);
	ctl.entrysize = sizeof(StatementPlan);
	ctl.hcxt = CacheMemoryContext;
	StatementCache = hash_create("idempotent_inbox statements", 64, &ctl,
								 HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
}

static uint64
statement_key(const char *source, int nargs, const Oid *argtypes)
{
	uint64		h = hash_bytes_extended((const unsigned char *) source, strlen(source), 0);

	if (nargs > 0)
		h = hash_bytes_extended((const unsigned char *) argtypes, nargs * sizeof(Oid), h);
	return h;
}

static bool
statement_matches(const StatementPlan *entry, const char *source, int nargs,
				  const Oid *argtypes)
{
	return entry->nargs == nargs &&
		strcmp(entry->source, source) == 0 &&
		(nargs == 0 || memcmp(entry->argtypes, argtypes, nargs * sizeof(Oid)) == 0);
}

static void
statement_release(StatementPlan *entry)
{
	spi_free_plan(&entry->plan);
	MemoryContextDelete(entry->cxt);
	dlist_delete(&entry->lru);
	StatementCount--;
}

static void
statement_evict_to(int limit)
{
	dlist_node *node = dlist_is_empty(&StatementLru) ? NULL : dlist_tail_node(&StatementLru);

	while (node != NULL && StatementCount > limit)
	{
		StatementPlan *entry = dlist_container(StatementPlan, lru, node);
		dlist_node *prev = dlist_has_prev(&StatementLru, node) ?
			dlist_prev_node(&StatementLru, node) : NULL;

		if (entry->pins == 0)
		{
			uint64		key = entry->key;

			statement_release(entry);
			hash_search(StatementCache, &key, HASH_REMOVE, NULL);
		}
		node = prev;
	}
}

/* Collect the $n a parsed statement refers to. */
static bool
collect_params(Node *node, void *context)
{
	Bitmapset **used = (Bitmapset **) context;

	if (node == NULL)
		return false;
	if (IsA(node, Param) && ((Param *) node)->paramkind == PARAM_EXTERN)
	{
		*used = bms_add_member(*used, ((Param *) node)->paramid);
		return false;
	}
	if (IsA(node, Query))
		return query_tree_walker((Query *) node, collect_params, context, 0);
	return expression_tree_walker(node, collect_params, context);
}

/* The effect commits with the caller's transaction, so it cannot end it. */
static void
CheckNotTransactionControl(RawStmt *stmt)
{
	if (IsA(stmt->stmt, TransactionStmt))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TRANSACTION_TERMINATION),
				 errmsg("the statement of claim_apply cannot control the transaction"),
				 errdetail("The claim and its effect commit or roll back with the caller's transaction.")));
}

/* Every $n the statement uses must have an argument. */
static void
CheckParamsGiven(int nparams, int nargs)
{
	if (nparams > nargs && nargs == 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_PARAMETER),
				 errmsg("statement refers to $%d but no arguments were given", nparams),
				 errhint("Pass one argument after the statement for each of $1..$%d.", nparams)));
	if (nparams > nargs)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_PARAMETER),
				 errmsg("statement refers to $%d but only %d argument%s given",
						nparams, nargs, nargs == 1 ? " was" : "s were"),
				 errhint("Pass one argument after the statement for each of $1..$%d.", nparams)));
}

/* Every argument must be used: a surplus one is nearly always a mistake. */
static void
CheckArgsUsed(Bitmapset *used, int nargs)
{
	for (int i = 1; i <= nargs; i++)
		if (!bms_is_member(i, used))
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_PARAMETER),
					 errmsg("statement does not use argument %d ($%d)", i, i),
					 errdetail("%d argument%s given.", nargs, nargs == 1 ? " was" : "s were")));
}

/*
 * Errors from parsing the statement point into the statement, not into the query
 * that called claim_apply: report the position as an internal one, as SPI does.
 */
static void
statement_error_callback(void *arg)
{
	const char *source = (const char *) arg;
	int			position = geterrposition();

	if (position > 0)
	{
		errposition(0);
		internalerrposition(position);
		internalerrquery(source);
	}
	errcontext("statement prepared by idempotent_inbox");
}

/*
 * Parse the statement once with variable parameters to learn the types of the
 * inferred arguments, and check the arguments against the $n it uses.
 */
static Oid *
infer_param_types(const char *source, int nargs, const Oid *argtypes)
{
	List	   *raw;
	int			nparams = nargs;
	Oid		   *types = palloc(sizeof(Oid) * Max(nargs, 1));
	Bitmapset  *used = NULL;
	bool		utility = false;
	ErrorContextCallback errcallback;
	ListCell   *lc;

	errcallback.callback = statement_error_callback;
	errcallback.arg = unconstify(char *, source);
	errcallback.previous = error_context_stack;
	error_context_stack = &errcallback;

	raw = pg_parse_query(source);
	for (int i = 0; i < nargs; i++)
		types[i] = (argtypes[i] == UNKNOWNOID) ? InvalidOid : argtypes[i];

	foreach(lc, raw)
		CheckNotTransactionControl(lfirst_node(RawStmt, lc));
	foreach(lc, raw)
	{
		Query	   *query = compat_parse_analyze_varparams(lfirst_node(RawStmt, lc), source,
														   &types, &nparams);

		if (query->commandType == CMD_UTILITY)
			utility = true;
		else
			collect_params((Node *) query, &used);
	}

	error_context_stack = errcallback.previous;

	CheckParamsGiven(nparams, nargs);
	/* Utility statements keep their expressions out of the tree we can walk. */
	if (!utility)
		CheckArgsUsed(used, nargs);

	for (int i = 0; i < nargs; i++)
		if (types[i] == InvalidOid || types[i] == UNKNOWNOID)
			types[i] = TEXTOID;
	return types;
}

static void
statement_build(StatementPlan *entry, const char *source, int nargs, const Oid *argtypes)
{
	Oid		   *types = infer_param_types(source, nargs, argtypes);
	MemoryContext oldcxt;

	entry->cxt = AllocSetContextCreate(CacheMemoryContext, "idempotent_inbox statement",
									   ALLOCSET_SMALL_SIZES);
	oldcxt = MemoryContextSwitchTo(entry->cxt);
	entry->source = pstrdup(source);
	entry->nargs = nargs;
	entry->argtypes = palloc(sizeof(Oid) * Max(nargs, 1));
	entry->paramtypes = palloc(sizeof(Oid) * Max(nargs, 1));
	entry->inputs = palloc0(sizeof(FmgrInfo) * Max(nargs, 1));
	entry->ioparams = palloc0(sizeof(Oid) * Max(nargs, 1));
	for (int i = 0; i < nargs; i++)
	{
		entry->argtypes[i] = argtypes[i];
		entry->paramtypes[i] = types[i];
		if (argtypes[i] == UNKNOWNOID)
		{
			Oid			typinput;

			getTypeInputInfo(types[i], &typinput, &entry->ioparams[i]);
			fmgr_info_cxt(typinput, &entry->inputs[i], entry->cxt);
		}
	}
	MemoryContextSwitchTo(oldcxt);

	entry->plan = spi_prepare_kept(source, nargs, entry->paramtypes);
	entry->pins = 0;
}

/*
 * The cached plan for a statement and argument types, built on a miss.  SPI must be
 * connected.  An error while building leaves no entry behind.
 */
StatementPlan *
statement_cache_get(const char *source, int nargs, const Oid *argtypes)
{
	uint64		key = statement_key(source, nargs, argtypes);
	StatementPlan *entry;
	StatementPlan fresh;
	bool		found;

	entry = hash_search(StatementCache, &key, HASH_FIND, NULL);
	if (entry != NULL && statement_matches(entry, source, nargs, argtypes))
	{
		dlist_move_head(&StatementLru, &entry->lru);
		return entry;
	}

	/* Build before touching the cache, so that a parse error changes nothing. */
	statement_build(&fresh, source, nargs, argtypes);

	if (entry != NULL)
	{
		/* A 64-bit hash collision: the newer statement takes the slot. */
		if (entry->pins > 0)
			elog(ERROR, "claim_apply statement cache collision with a running statement");
		statement_release(entry);
		hash_search(StatementCache, &key, HASH_REMOVE, NULL);
	}

	statement_evict_to(statement_cache_size - 1);
	entry = hash_search(StatementCache, &key, HASH_ENTER, &found);
	fresh.key = key;
	*entry = fresh;
	dlist_push_head(&StatementLru, &entry->lru);
	StatementCount++;
	return entry;
}

/*
 * Convert inferred arguments, given as C strings, with their type's input
 * function, in place.  Done before the claim, so that a bad value is an error on
 * every delivery, duplicates included.
 */
void
statement_convert_args(StatementPlan *entry, Datum *values, const char *nulls)
{
	for (int i = 0; i < entry->nargs; i++)
		if (entry->argtypes[i] == UNKNOWNOID && nulls[i] != 'n')
			values[i] = InputFunctionCall(&entry->inputs[i], DatumGetCString(values[i]),
										  entry->ioparams[i], -1);
}

/*
 * Keep an entry from eviction while a caller holds it across other work (the
 * claim can fire triggers that run claim_apply, which may evict).
 */
void
statement_pin(StatementPlan *entry)
{
	entry->pins++;
}

void
statement_unpin(StatementPlan *entry)
{
	entry->pins--;
}

/* Run the statement with converted argument values. */
void
statement_execute(StatementPlan *entry, Datum *values, const char *nulls)
{
	entry->pins++;
	PG_TRY();
	{
		int			rc = SPI_execute_plan(entry->plan, values, nulls, false, 0);

		if (rc < 0)
			elog(ERROR, "claim_apply statement failed: %s", SPI_result_code_string(rc));
	}
	PG_FINALLY();
	{
		entry->pins--;
	}
	PG_END_TRY();
}
