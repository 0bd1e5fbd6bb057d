/*
 * failures.h
 *		What record_failure, the operator's verbs (failures.c) and claim_in_order
 *		(key_order.c) share: the call's inbox and message, and statements on the
 *		extension's failures and blocked tables.
 */
#ifndef INBOX_FAILURES_H
#define INBOX_FAILURES_H

#include "fmgr.h"
#include "datatype/timestamp.h"

#include "citus_failures.h"
#include "inbox_info.h"

/*
 * One call's inbox and message, with the message id (and, of a sharded inbox,
 * the shard key) as the failures table keeps them: as text.
 */
typedef struct FailureCall
{
	FunctionCallInfo fcinfo;
	InboxInfo  *inbox;
	Datum		id;
	Datum		id_text;
	const Datum *shard;			/* &shard_value of a _sharded call, else NULL */
	Datum		shard_value;	/* of the inbox's shard key type */
	Datum		shard_text;		/* its text form (failures.c); 0 if not sharded, or on Citus */
	int			argno;			/* the first argument after the message id */
	Oid			actor;			/* the caller, for the audit row */
	const CompanionTables *citus;	/* &companions of a Citus table, else NULL */
	CompanionTables companions;
} FailureCall;

extern int	failures_pin_settings(void);
extern void failure_call(FunctionCallInfo fcinfo, AclMode rights, FailureCall *call);
extern uint64 failures_execute(const FailureCall *call, const char *statement, int nargs,
							   const Oid *types, const Datum *args, const bool *args_null);
extern void failure_delete(const FailureCall *call);
extern void failures_purge(FunctionCallInfo fcinfo, const InboxInfo *inbox,
						   TimestampTz cutoff);
extern Datum text_arg_clipped(FunctionCallInfo fcinfo, int argno, int max, bool *isnull);
extern Datum ordering_key_arg(FunctionCallInfo fcinfo, int argno, bool *isnull);
extern void key_order_lock(const FailureCall *call, Datum ordering_key);

#endif							/* INBOX_FAILURES_H */
