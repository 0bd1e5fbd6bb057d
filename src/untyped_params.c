/*
 * untyped_params.c
 *		Types for driver parameters left untyped in our "any" arguments.
 *
 * Drivers send most values as parameters of unspecified type and let the server
 * infer each from the place it fills.  An "any" argument says nothing, so
 * PostgreSQL leaves such a parameter unknown and rejects the whole query at parse
 * time (42P18, "could not determine data type of parameter $n"), before our
 * function could convert the value the way it converts an untyped literal.
 *
 * Once the query is analyzed, this hook gives every still-unknown parameter in an
 * "any" argument of one of our C functions the type a literal would end up with:
 *	- a value for claim_apply's statement, when the statement is a constant in
 *	  the query: the type the statement gives its $n.  Drivers that encode values
 *	  by the server's parameter description (asyncpg, pgx) then take an integer
 *	  for an integer.
 *	- a shard key, when the inbox is a constant: the type of the inbox's first
 *	  column, where create_sharded_inbox puts the shard key.
 *	- transition_key's key, when the table is a constant: the type of its
 *	  primary key's column.
 *	- otherwise text, which the functions convert like a literal.
 *
 * Only parameters that are still unknown are touched: a type the client declared
 * is never changed, since the client encodes the value by it.
 *
 * The hook acts only on a ParseState set up by PostgreSQL's own inferred-parameter
 * code (the Parse message, PREPARE), whose private state we read.  At load time a
 * ParseState is set up that way once, to learn the addresses of its hooks and to
 * check that the state is laid out as we read it; if not, the hook is not
 * installed and calls fail as they would without the extension.
 *
 * One case stays PostgreSQL's: a parameter that fills an argument of known type
 * (the message id, say) and also an "any" one is typed by the first and left
 * unknown in the second, and PostgreSQL rejects the query (42P08, "could not
 * determine data type of parameter $n") before any hook of parse analysis runs.
 * All the extension can do there is say how to fix the call: an emit_log_hook
 * adds a hint naming the parameter and its cast.  (It runs only for errors that
 * reach the server log, as all do unless log_min_messages is above ERROR.)
 *
 * The hook exists from the moment the library is loaded: in every session when
 * it is preloaded (shared_preload_libraries, or session_preload_libraries, which
 * ALTER DATABASE can set without a restart), else only after a call of one of
 * the extension's functions has loaded it.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/relation.h"
#include "access/sysattr.h"
#include "catalog/pg_language.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "mb/pg_wchar.h"
#include "nodes/nodeFuncs.h"
#include "parser/analyze.h"
#include "parser/parse_param.h"
#include "tcop/tcopprot.h"
#include "utils/builtins.h"
#include "utils/formatting.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/relcache.h"
#include "utils/syscache.h"

#include "compat.h"
#include "inbox.h"
#include "statement_cache.h"
#include "untyped_params.h"

/* The state of parse_param.c's inferred parameters, as checked at load time. */
typedef struct InferredParams
{
	Oid		  **paramTypes;
	int		   *numParams;
} InferredParams;

static ParseParamRefHook core_paramref_hook = NULL;
static CoerceParamHook core_coerce_param_hook = NULL;
static post_parse_analyze_hook_type prev_post_parse_analyze_hook = NULL;
static emit_log_hook_type prev_emit_log_hook = NULL;

/* PostgreSQL's message for a parameter typed in one place and unknown in another. */
#define UNDETERMINED_PARAM_MESSAGE "could not determine data type of parameter $%d"

/* Our functions with "any" arguments. */
static const char *const any_functions[] = {
	"acquire_sharded", "claim_apply", "claim_apply_many_sharded",
	"claim_apply_sharded", "claim_many_sharded",
	"claim_sharded", "complete_sharded", "finish_sharded", "release_sharded",
	"result_sharded", "transition_key", "try_claim_sharded"
};

/* The types decided for one query's parameters, InvalidOid where none was. */
typedef struct Decisions
{
	int			nparams;
	Oid		   *types;
	bool		any;
} Decisions;

static void untyped_params_hook(ParseState *pstate, Query *query, CompatJumbleState *jstate);
static void reused_param_hint(ErrorData *edata);

void
untyped_params_init(void)
{
	ParseState *pstate = make_parsestate(NULL);
	Oid		   *types = NULL;
	int			nparams = 0;
	InferredParams *state;

	setup_parse_variable_parameters(pstate, &types, &nparams);
	state = (InferredParams *) pstate->p_ref_hook_state;
	if (state != NULL && state->paramTypes == &types && state->numParams == &nparams &&
		pstate->p_paramref_hook != NULL && pstate->p_coerce_param_hook != NULL)
	{
		core_paramref_hook = pstate->p_paramref_hook;
		core_coerce_param_hook = pstate->p_coerce_param_hook;
		prev_post_parse_analyze_hook = post_parse_analyze_hook;
		post_parse_analyze_hook = untyped_params_hook;
		prev_emit_log_hook = emit_log_hook;
		emit_log_hook = reused_param_hint;
	}
	else
		elog(LOG, "idempotent_inbox: untyped parameters are not typed: this server's parameter inference is not the one the extension was built for");
	if (state != NULL)
		pfree(state);
	free_parsestate(pstate);
}

static bool
is_unknown_param(Node *node)
{
	return IsA(node, Param) && ((Param *) node)->paramkind == PARAM_EXTERN &&
		((Param *) node)->paramtype == UNKNOWNOID;
}

/* A text constant, seen through the implicit coercions the parser adds. */
static const char *
constant_text(Node *node)
{
	node = strip_implicit_coercions(node);
	if (IsA(node, Const) && !((Const *) node)->constisnull &&
		(((Const *) node)->consttype == TEXTOID || ((Const *) node)->consttype == VARCHAROID))
		return TextDatumGetCString(((Const *) node)->constvalue);
	return NULL;
}

/* A relation given as a constant (a literal inbox name, or a regclass). */
static Oid
constant_relation(Node *node)
{
	node = strip_implicit_coercions(node);
	if (IsA(node, Const) && !((Const *) node)->constisnull &&
		((Const *) node)->consttype == REGCLASSOID)
		return DatumGetObjectId(((Const *) node)->constvalue);
	return InvalidOid;
}

static void
decide(Decisions *d, Param *param, Oid type)
{
	if (param->paramid < 1 || param->paramid > d->nparams)
		return;
	if (!OidIsValid(d->types[param->paramid - 1]))
		d->types[param->paramid - 1] = OidIsValid(type) ? type : TEXTOID;
	d->any = true;
}

/*
 * The types the statement gives its $n, for the values of a claim_apply call
 * whose statement is a constant: strings and untyped values are inferred, as the
 * function will infer them, and typed values keep their type.
 */
static Oid *
statement_types(const char *source, List *values)
{
	int			nargs = list_length(values);
	Oid		   *argtypes = palloc(sizeof(Oid) * Max(nargs, 1));
	int			i = 0;
	ListCell   *lc;

	foreach(lc, values)
	{
		Oid			type = exprType(lfirst(lc));

		argtypes[i++] = (type == TEXTOID || type == VARCHAROID || type == UNKNOWNOID) ?
			UNKNOWNOID : type;
	}
	return statement_cache_param_types(source, nargs, argtypes, false);
}

/*
 * The type of a table's primary key when it is one column, else InvalidOid (text:
 * the call then fails as it would with a literal).  Parse analysis holds no lock
 * on the table; a key changed before the call runs is seen there.
 */
static Oid
primary_key_type(Oid relid)
{
	Relation	rel = try_relation_open(relid, AccessShareLock);
	Oid			type = InvalidOid;
	Bitmapset  *columns;

	if (rel == NULL)
		return InvalidOid;
	columns = RelationGetIndexAttrBitmap(rel, INDEX_ATTR_BITMAP_PRIMARY_KEY);
	if (bms_num_members(columns) == 1)
		type = TupleDescAttr(RelationGetDescr(rel),
							 bms_singleton_member(columns) + FirstLowInvalidHeapAttributeNumber - 1)->atttypid;
	relation_close(rel, AccessShareLock);
	return type;
}

/* Whether a C function's library is ours: "$libdir/idempotent_inbox", or a path. */
static bool
is_our_library(const char *probin)
{
	const char *base = strrchr(probin, '/');

	base = base ? base + 1 : probin;
	return strcmp(base, "idempotent_inbox") == 0 || strcmp(base, "idempotent_inbox.so") == 0;
}

/* The untyped parameters in the "any" arguments of one call of ours. */
static void
decide_call(Decisions *d, FuncExpr *call)
{
	HeapTuple	tuple;
	Form_pg_proc proc;
	bool		isnull;
	Datum		datum;
	bool		ours;
	bool		has_statement;
	bool		by_primary_key;
	int			nargs = list_length(call->args);
	int			first_value;
	Oid		   *value_types = NULL;
	int			i;
	ListCell   *lc;

	tuple = SearchSysCache1(PROCOID, ObjectIdGetDatum(call->funcid));
	if (!HeapTupleIsValid(tuple))
		return;
	proc = (Form_pg_proc) GETSTRUCT(tuple);
	datum = SysCacheGetAttr(PROCOID, tuple, Anum_pg_proc_probin, &isnull);
	ours = proc->prolang == ClanguageId && !isnull && is_our_library(TextDatumGetCString(datum));
	if (!ours)
	{
		ReleaseSysCache(tuple);
		return;
	}
	datum = SysCacheGetAttr(PROCOID, tuple, Anum_pg_proc_prosrc, &isnull);
	has_statement = !isnull &&
		(strcmp(TextDatumGetCString(datum), "inbox_claim_apply") == 0 ||
		 strcmp(TextDatumGetCString(datum), "inbox_claim_apply_sharded") == 0);
	by_primary_key = !isnull && strcmp(TextDatumGetCString(datum), "inbox_transition_key") == 0;

	/* Spread variadic "any" values begin at the last declared argument. */
	first_value = (proc->provariadic == ANYOID && !call->funcvariadic) ?
		proc->pronargs - 1 : nargs;

	i = 0;
	foreach(lc, call->args)
	{
		Node	   *arg = lfirst(lc);
		/* (An explicit VARIADIC array is an array, whatever "any" says.) */
		bool		is_any = (i >= first_value) ||
			(i < proc->pronargs && proc->proargtypes.values[i] == ANYOID &&
			 !(call->funcvariadic && i == proc->pronargs - 1));
		Oid			type = InvalidOid;

		if (!is_any || !is_unknown_param(arg))
		{
			i++;
			continue;
		}
		if (i >= first_value && has_statement && first_value >= 1)
		{
			/* A value of claim_apply's statement, which is the argument before them. */
			if (value_types == NULL)
			{
				const char *source = constant_text(list_nth(call->args, first_value - 1));

				value_types = source ?
					statement_types(source, list_copy_tail(call->args, first_value)) :
					palloc0(sizeof(Oid) * (nargs - first_value));
			}
			type = value_types[i - first_value];
		}
		else if (i == 1)
		{
			/*
			 * transition_key's key: the primary key's column; the shard key of a
			 * _sharded call: the inbox's first column.
			 */
			Oid			relid = constant_relation(linitial(call->args));

			if (OidIsValid(relid))
				type = by_primary_key ? primary_key_type(relid) : get_atttype(relid, 1);
		}
		decide(d, (Param *) arg, type);
		i++;
	}
	ReleaseSysCache(tuple);
}

static bool
decide_walker(Node *node, Decisions *d)
{
	if (node == NULL)
		return false;
	if (IsA(node, FuncExpr))
	{
		FuncExpr   *call = (FuncExpr *) node;
		ListCell   *lc;

		foreach(lc, call->args)
		{
			if (is_unknown_param(lfirst(lc)))
			{
				decide_call(d, call);
				break;
			}
		}
	}
	if (IsA(node, Query))
		return query_tree_walker((Query *) node, decide_walker, d, 0);
	return expression_tree_walker(node, decide_walker, d);
}

/* Every reference to a decided parameter takes its type. */
static bool
apply_walker(Node *node, Decisions *d)
{
	if (node == NULL)
		return false;
	if (is_unknown_param(node))
	{
		Param	   *param = (Param *) node;

		if (param->paramid >= 1 && param->paramid <= d->nparams &&
			OidIsValid(d->types[param->paramid - 1]))
		{
			param->paramtype = d->types[param->paramid - 1];
			param->paramtypmod = -1;
			param->paramcollid = get_typcollation(param->paramtype);
		}
		return false;
	}
	if (IsA(node, Query))
		return query_tree_walker((Query *) node, apply_walker, d, 0);
	return expression_tree_walker(node, apply_walker, d);
}

/*
 * The query a utility statement carries already analyzed: a call in EXPLAIN,
 * DECLARE CURSOR (server-side cursors of drivers) or CREATE TABLE AS.
 */
static Query *
query_to_walk(Query *query)
{
	Node	   *inner = NULL;

	if (query->commandType != CMD_UTILITY)
		return query;
	if (IsA(query->utilityStmt, ExplainStmt))
		inner = ((ExplainStmt *) query->utilityStmt)->query;
	else if (IsA(query->utilityStmt, DeclareCursorStmt))
		inner = ((DeclareCursorStmt *) query->utilityStmt)->query;
	else if (IsA(query->utilityStmt, CreateTableAsStmt))
		inner = ((CreateTableAsStmt *) query->utilityStmt)->query;
	return (inner != NULL && IsA(inner, Query)) ? query_to_walk((Query *) inner) : NULL;
}

static void
untyped_params_hook(ParseState *pstate, Query *query, CompatJumbleState *jstate)
{
	InferredParams *state;
	Decisions	d;
	bool		unknown = false;

	if (prev_post_parse_analyze_hook)
		prev_post_parse_analyze_hook(pstate, query, jstate);

	/* Only inferred parameters can be unknown, and most queries have none. */
	if (pstate->p_paramref_hook != core_paramref_hook ||
		pstate->p_coerce_param_hook != core_coerce_param_hook)
		return;
	state = (InferredParams *) pstate->p_ref_hook_state;
	for (int i = 0; i < *state->numParams && !unknown; i++)
		unknown = (*state->paramTypes)[i] == UNKNOWNOID;
	if (!unknown || (query = query_to_walk(query)) == NULL)
		return;

	d.nparams = *state->numParams;
	d.types = palloc0(sizeof(Oid) * d.nparams);
	d.any = false;
	decide_walker((Node *) query, &d);
	if (!d.any)
		return;

	apply_walker((Node *) query, &d);
	for (int i = 0; i < d.nparams; i++)
		if (OidIsValid(d.types[i]) && (*state->paramTypes)[i] == UNKNOWNOID)
			(*state->paramTypes)[i] = d.types[i];
	pfree(d.types);
}

/*
 * The hint for a parameter used both where its type is known and as a value in
 * one of our "any" arguments.  The error's cursor is at the occurrence that was
 * left unknown, a character position in the query being analyzed; text is the
 * cast that always fixes it, since the functions convert a text value the way
 * they convert a literal.
 */
static void
reused_param_hint(ErrorData *edata)
{
	const char *query = debug_query_string;
	const char *p;
	char	   *lowered;
	const char *function = NULL;
	const char *found_at = NULL;
	int			paramno = 0;

	if (prev_emit_log_hook)
		prev_emit_log_hook(edata);

	if (edata->elevel != ERROR || edata->sqlerrcode != ERRCODE_AMBIGUOUS_PARAMETER ||
		edata->hint != NULL || edata->internalquery != NULL || edata->cursorpos <= 0 ||
		edata->message_id == NULL || strcmp(edata->message_id, UNDETERMINED_PARAM_MESSAGE) != 0 ||
		query == NULL)
		return;

	p = query;
	for (int i = 1; i < edata->cursorpos && *p != '\0'; i++)
		p += pg_mblen(p);
	if (*p != '$' || !isdigit((unsigned char) p[1]))
		return;
	paramno = atoi(p + 1);

	/* The call the parameter is an argument of: the nearest of our names before it. */
	lowered = asc_tolower(query, p - query);
	for (const char *at = lowered; *at != '\0'; at++)
		for (int i = 0; i < (int) lengthof(any_functions); i++)
			if (strncmp(at, any_functions[i], strlen(any_functions[i])) == 0 &&
				(function == NULL || strlen(any_functions[i]) > strlen(function) ||
				 at > found_at))
			{
				function = any_functions[i];
				found_at = at;
			}
	pfree(lowered);
	if (function == NULL)
		return;

	edata->hint = psprintf("Parameter $%d is also used where its type is known, so inbox.%s "
						   "cannot type it here.  Cast it here, as in $%d::text, or pass the "
						   "value again as a separate parameter.",
						   paramno, function, paramno);
}
