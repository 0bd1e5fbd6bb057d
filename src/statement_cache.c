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
 * idempotent_inbox.statement_cache_size and evicted least recently used first.
 *
 * One protocol keeps entries alive while they are used: statement_cache_get
 * returns its entry pinned, the caller unpins it with statement_cache_unpin when done
 * (in PG_FINALLY, so an error unpins too), and a pinned entry is never freed: a
 * nested claim_apply (a trigger fired by the statement) may fill the cache with
 * other statements, and eviction passes over pinned entries, leaving the cache
 * above its size until they are unpinned.  The pins of an aborted transaction
 * are forgotten at its end in case an error skipped the unpin.
 *
 * An entry is built in a memory context under the caller's, and moved under
 * CacheMemoryContext only once its plan is kept: a statement that fails to
 * parse or prepare leaves nothing behind.
 *
 * The plancache re-plans kept plans when the objects they use change, and
 * re-checks privileges on every execution, so a cached plan always runs with the
 * caller's current rights.
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "common/hashfn.h"
#include "lib/ilist.h"
#include "commands/copy.h"
#include "nodes/nodeFuncs.h"
#include "parser/analyze.h"
#include "tcop/tcopprot.h"
#include "utils/guc.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"

#include "compat.h"
#include "inbox.h"
#include "spi_util.h"
#include "statement_cache.h"

struct StatementPlan
{
	uint64		key;			/* hash of text and argument types; HTAB key */
	MemoryContext cxt;			/* owns everything below but the plan */
	char	   *source;
	int			nargs;
	bool		batch;			/* claim_apply_many's: $1 is the fresh ids */
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

static void statement_cache_xact(XactEvent event, void *arg);

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
	RegisterXactCallback(statement_cache_xact, NULL);
}

/*
 * Nothing runs any more once a transaction has aborted: every pin left by an
 * error that skipped its unpin is stale.  The next miss shrinks the cache.
 */
static void
statement_cache_xact(XactEvent event, void *arg)
{
	dlist_iter	iter;

	if (event != XACT_EVENT_ABORT && event != XACT_EVENT_PARALLEL_ABORT)
		return;
	dlist_foreach(iter, &StatementLru)
		dlist_container(StatementPlan, lru, iter.cur)->pins = 0;
}

static uint64
statement_key(const char *source, int nargs, const Oid *argtypes, bool batch)
{
	uint64		h = hash_bytes_extended((const unsigned char *) source, strlen(source), batch);

	if (nargs > 0)
		h = hash_bytes_extended((const unsigned char *) argtypes, nargs * sizeof(Oid), h);
	return h;
}

static bool
statement_matches(const StatementPlan *entry, const char *source, int nargs,
				  const Oid *argtypes, bool batch)
{
	return entry->nargs == nargs && entry->batch == batch &&
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

/* A statement with nothing to run would answer "applied" for an effect never made. */
static void
CheckNotEmpty(List *raw)
{
	if (raw == NIL)
		ereport(ERROR,
				(errcode(ERRCODE_SYNTAX_ERROR),
				 errmsg("the statement of claim_apply is empty"),
				 errdetail("It has no SQL command, only white space or comments."),
				 errhint("Pass the statement that applies the effect, such as an INSERT or UPDATE.")));
}

/* COPY to or from the client needs the client protocol, which a function has not. */
static void
CheckNotClientCopy(RawStmt *stmt)
{
	if (IsA(stmt->stmt, CopyStmt) && ((CopyStmt *) stmt->stmt)->filename == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("the statement of claim_apply cannot be COPY %s",
						((CopyStmt *) stmt->stmt)->is_from ? "FROM STDIN" : "TO STDOUT"),
				 errhint("Use INSERT with the values as arguments, or INSERT ... SELECT.")));
}

/*
 * Every $n the statement uses must have an argument.  A batch's statement
 * (claim_apply_many) gets the fresh ids as $1 and the caller's arrays after it.
 */
static void
CheckParamsGiven(int nparams, int nargs, bool batch)
{
	if (nparams <= nargs)
		return;
	if (batch)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_PARAMETER),
				 errmsg("statement refers to $%d but only $1..$%d are given", nparams, nargs),
				 errdetail("$1 is the array of fresh message ids; $2 and on are the arrays passed after the statement, %d here.",
						   nargs - 1),
				 errhint("Pass one array after the statement for each of $2..$%d.", nparams)));
	if (nargs == 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_PARAMETER),
				 errmsg("statement refers to $%d but no arguments were given", nparams),
				 errhint("Pass one argument after the statement for each of $1..$%d.", nparams)));
	ereport(ERROR,
			(errcode(ERRCODE_UNDEFINED_PARAMETER),
			 errmsg("statement refers to $%d but only %d argument%s given",
					nparams, nargs, nargs == 1 ? " was" : "s were"),
			 errhint("Pass one argument after the statement for each of $1..$%d.", nparams)));
}

/*
 * Every argument must be used: a surplus one is nearly always a mistake.  A
 * batch's statement may leave out $1, the fresh ids, when the values say it all.
 */
static void
CheckArgsUsed(Bitmapset *used, int nargs, bool batch)
{
	for (int i = batch ? 2 : 1; i <= nargs; i++)
		if (!bms_is_member(i, used))
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_PARAMETER),
					 errmsg("statement does not use argument %d ($%d)", batch ? i - 1 : i, i),
					 errdetail("%d argument%s given.", batch ? nargs - 1 : nargs,
							   (batch ? nargs - 1 : nargs) == 1 ? " was" : "s were")));
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
 * inferred arguments, and check the arguments against the $n it uses.  Also
 * asked at parse time of a call, for the types of untyped driver parameters
 * (untyped_params.c).
 */
Oid *
statement_cache_param_types(const char *source, int nargs, const Oid *argtypes, bool batch)
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

	CheckNotEmpty(raw);
	foreach(lc, raw)
	{
		CheckNotTransactionControl(lfirst_node(RawStmt, lc));
		CheckNotClientCopy(lfirst_node(RawStmt, lc));
	}
	foreach(lc, raw)
	{
		Query	   *query = parse_analyze_varparams(lfirst_node(RawStmt, lc), source,
													&types, &nparams, NULL);

		if (query->commandType == CMD_UTILITY)
			utility = true;
		else
			collect_params((Node *) query, &used);
	}

	error_context_stack = errcallback.previous;

	CheckParamsGiven(nparams, nargs, batch);
	/* Utility statements keep their expressions out of the tree we can walk. */
	if (!utility)
		CheckArgsUsed(used, nargs, batch);

	for (int i = 0; i < nargs; i++)
		if (types[i] == InvalidOid || types[i] == UNKNOWNOID)
			types[i] = TEXTOID;
	return types;
}

/*
 * Build an entry in a context of its own under the caller's, so that an error
 * anywhere here frees everything with the failed call; the caller keeps it by
 * moving the context under CacheMemoryContext.  The plan is kept last.
 */
static void
statement_build(StatementPlan *entry, const char *source, int nargs, const Oid *argtypes,
				bool batch)
{
	Oid		   *types = statement_cache_param_types(source, nargs, argtypes, batch);
	MemoryContext oldcxt;

	entry->plan = NULL;
	entry->pins = 0;
	entry->cxt = AllocSetContextCreate(CurrentMemoryContext, "idempotent_inbox statement",
									   ALLOCSET_SMALL_SIZES);
	oldcxt = MemoryContextSwitchTo(entry->cxt);
	entry->source = pstrdup(source);
	entry->nargs = nargs;
	entry->batch = batch;
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
	MemoryContextSetParent(entry->cxt, CacheMemoryContext);
}

/*
 * Would the types inferred for the statement's untyped arguments be inferred
 * differently now?  The plancache re-analyses a kept plan after DDL on what it
 * uses or under another search_path, but with the parameter types it was given:
 * those inferred from a column since retyped, a table since replaced or the
 * schemas of the old search_path, and the input functions that read the values.
 * A new session would infer afresh, and so must we: on any such change the entry
 * is built again.  Invalidations other sessions committed are taken in first, as
 * the plancache would take them when it locks the statement's tables.
 */
static bool
statement_inference_stale(StatementPlan *entry)
{
	CachedPlanSource *plan;
	bool		inferred = false;

	for (int i = 0; i < entry->nargs; i++)
		if (entry->argtypes[i] == UNKNOWNOID)
			inferred = true;
	if (!inferred)
		return false;
	AcceptInvalidationMessages();
	plan = linitial(SPI_plan_get_plan_sources(entry->plan));
	return !plan->is_valid || !compat_search_path_matches(plan);
}

/*
 * The cached plan for a statement and argument types, built on a miss, returned
 * pinned: the caller must statement_cache_unpin it (in PG_FINALLY).  SPI must be
 * connected.  An error while building leaves no entry and no memory behind.
 */
static StatementPlan *
statement_lookup(const char *source, int nargs, const Oid *argtypes, bool batch)
{
	uint64		key = statement_key(source, nargs, argtypes, batch);
	StatementPlan *entry;
	StatementPlan fresh;
	bool		found;

	entry = hash_search(StatementCache, &key, HASH_FIND, NULL);
	if (entry != NULL && statement_matches(entry, source, nargs, argtypes, batch) &&
		(entry->pins > 0 || !statement_inference_stale(entry)))
	{
		dlist_move_head(&StatementLru, &entry->lru);
		entry->pins++;
		return entry;
	}

	/* Build before touching the cache, so that a parse error changes nothing. */
	statement_build(&fresh, source, nargs, argtypes, batch);

	if (entry != NULL)
	{
		/*
		 * A 64-bit hash collision, or a stale inference: the newer statement
		 * takes the slot, unless the older one is running further up the stack.
		 */
		if (entry->pins > 0)
		{
			spi_free_plan(&fresh.plan);
			MemoryContextDelete(fresh.cxt);
			elog(ERROR, "claim_apply statement cache collision with a running statement");
		}
		statement_release(entry);
		hash_search(StatementCache, &key, HASH_REMOVE, NULL);
	}

	statement_evict_to(statement_cache_size - 1);
	entry = hash_search(StatementCache, &key, HASH_ENTER, &found);
	fresh.key = key;
	*entry = fresh;
	dlist_push_head(&StatementLru, &entry->lru);
	StatementCount++;
	entry->pins = 1;
	return entry;
}

StatementPlan *
statement_cache_get(const char *source, int nargs, const Oid *argtypes)
{
	return statement_lookup(source, nargs, argtypes, false);
}

/* For claim_apply_many: $1 is the array of fresh ids, which the statement may leave out. */
StatementPlan *
statement_cache_get_batch(const char *source, int nargs, const Oid *argtypes)
{
	return statement_lookup(source, nargs, argtypes, true);
}

/*
 * Convert inferred arguments, given as C strings, with their type's input
 * function, in place.  Done before the claim, so that a bad value is an error on
 * every delivery, duplicates included.
 */
void
statement_cache_convert_args(StatementPlan *entry, Datum *values, const char *nulls)
{
	for (int i = 0; i < entry->nargs; i++)
		if (entry->argtypes[i] == UNKNOWNOID && nulls[i] != 'n')
			values[i] = InputFunctionCall(&entry->inputs[i], DatumGetCString(values[i]),
										  entry->ioparams[i], -1);
}

/* The type the statement gives its $(i + 1), as resolved when it was prepared. */
Oid
statement_cache_param_type(const StatementPlan *entry, int i)
{
	Assert(i >= 0 && i < entry->nargs);
	return entry->paramtypes[i];
}

/*
 * Pin once more an entry already held (statement_cache_get pins what it
 * returns), and let go of one pin: every pin is undone by exactly one unpin.
 */
void
statement_cache_pin(StatementPlan *entry)
{
	entry->pins++;
}

void
statement_cache_unpin(StatementPlan *entry)
{
	Assert(entry->pins > 0);
	if (entry->pins > 0)
		entry->pins--;
}

/* Run the statement, pinned by the caller, with converted argument values. */
void
statement_cache_execute(StatementPlan *entry, Datum *values, const char *nulls)
{
	int			rc;

	Assert(entry->pins > 0);
	rc = SPI_execute_plan(entry->plan, values, nulls, false, 0);
	if (rc < 0)
		spi_report_error(rc, "the statement of claim_apply");
}
