/*
 * claim_routed.h
 *		Claims of Citus tables and sharded inboxes, one statement each
 *		(claim_routed.c).
 */
#ifndef INBOX_CLAIM_ROUTED_H
#define INBOX_CLAIM_ROUTED_H

#include "access/htup.h"
#include "access/tupdesc.h"

#include "inbox_info.h"

extern Datum claim_routed_shard_key(FunctionCallInfo fcinfo, int argno, const InboxInfo *inbox);
extern bool claim_routed(InboxInfo *inbox, Datum message_id, const Datum *shard_key);
extern bool claim_routed_held(InboxInfo *inbox, Datum message_id, const Datum *shard_key,
							  TimestampTz now);
extern bool claim_routed_may_skip(const InboxInfo *inbox);
extern void claim_routed_check_shard(InboxInfo *inbox, HeapTuple row, TupleDesc desc,
									 Datum message_id, Datum shard_key);

#endif							/* INBOX_CLAIM_ROUTED_H */
