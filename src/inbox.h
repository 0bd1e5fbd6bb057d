/*
 * inbox.h
 *		What the modules of idempotent_inbox share.
 *
 * Terms, used the same way in every file:
 *	inbox		an ordinary table of claims for one consumer, listed in the registry
 *	claim		the row that says "this message id is being or has been applied"
 *	effect		the business change applied in the same transaction as the claim
 *	duplicate	a delivery whose id is already claimed
 */
#ifndef INBOX_H
#define INBOX_H

#include "postgres.h"

#include "executor/spi.h"
#include "fmgr.h"
#include "storage/lockdefs.h"
#include "utils/array.h"
#include "utils/jsonb.h"
#include "utils/relcache.h"

/* Longest message id we accept, in bytes; keeps claims well inside an index tuple. */
#define INBOX_MAX_ID_BYTES 1024

/*
 * What a backend remembers about one inbox.  Entries live in a hash keyed by the
 * table's OID and are marked stale by a relcache callback; the plans are kept
 * SPI plans built from the table's current qualified name.
 */
typedef struct InboxInfo
{
	Oid			relid;			/* hash key */
	bool		valid;			/* false once a relcache invalidation arrives */
	Oid			keytype;		/* TEXTOID, UUIDOID or INT8OID */
	Oid			pkindex;		/* the message_id primary key index */
	RegProcedure key_eq;		/* equality proc of that index, for probes */
	char	   *qualname;		/* quoted, schema-qualified table name */
	SPIPlanPtr	claim_plan;		/* single INSERT ... ON CONFLICT DO NOTHING */
	SPIPlanPtr	claim_many_plan;	/* batch variant, RETURNING the fresh ids */
	int			dup_rate;		/* recent share of duplicates, see claim_one */
} InboxInfo;

/* What a call site of one of our SQL functions was declared with (signature.c). */
typedef struct CallSignature
{
	Oid			keyargtype;		/* declared type of the message id argument */
	Oid			keytype;		/* the same, or its element type for arrays */
	Oid			variadic_type;	/* InvalidOid, ANYOID or TEXTOID */
	Oid			rettype;		/* declared result type (an enum for some) */
} CallSignature;

/*
 * Recent share of calls with some property, in 1/1024ths, each call weighing
 * 1/16: what the adaptive paths (claim's probe, upsert's and transition's order
 * of steps) decide from.
 */
#define SHARE_SCALE 1024
#define SHARE_THRESHOLD_HALF (SHARE_SCALE / 2)

static inline void
share_record(int *share, bool hit)
{
	*share += ((hit ? SHARE_SCALE : 0) - *share) >> 4;
}

/* idempotent_inbox.c */
extern void _PG_init(void);

/* registry.c */
extern void registry_init(void);
extern InboxInfo *registry_lookup(FunctionCallInfo fcinfo, int argno, LOCKMODE lockmode);

/* message_id.c */
extern Datum message_id_from_arg(FunctionCallInfo fcinfo, int argno, Oid argtype,
								 const InboxInfo *inbox);
extern Datum message_id_from_element(Datum value, bool isnull, Oid argtype,
									 const InboxInfo *inbox, int position);

/* signature.c */
extern const CallSignature *call_signature(FunctionCallInfo fcinfo);
extern Datum enum_label(Oid enumtype, const char *label);

/* spi_util.c */
extern void spi_connect(void);
extern SPIPlanPtr spi_prepare_kept(const char *sql, int nargs, Oid *argtypes);
extern void spi_free_plan(SPIPlanPtr *plan);
extern void spi_execute_expect(SPIPlanPtr plan, Datum *values, const char *nulls,
							   int expected);

/* claim.c */
extern bool claim_one(InboxInfo *inbox, Datum message_id);

/* row_fetch.c */
extern bool row_fetch_allowed(Relation rel);
extern bool row_fetch(Relation rel, Oid keyindex, const Datum *row, const bool *rownulls,
					  Datum *stored, bool *storednulls);

/* row_values.c */
extern void row_values_init(void);
extern void row_values_from_jsonb(Relation rel, Jsonb *object, Datum *values, bool *nulls);

/* state_machine.c */
extern ArrayType *state_machine_sources(Relation rel, const char *column, const char *to_state,
										Oid nspid);

/* statement_cache.c */
typedef struct StatementPlan StatementPlan;
extern void statement_cache_init(void);
extern StatementPlan *statement_cache_get(const char *source, int nargs, const Oid *argtypes);
extern void statement_convert_args(StatementPlan *entry, Datum *values, const char *nulls);
extern void statement_execute(StatementPlan *entry, Datum *values, const char *nulls);
extern void statement_pin(StatementPlan *entry);
extern void statement_unpin(StatementPlan *entry);

#endif							/* INBOX_H */
