/*
 * claim_routed.h
 *		Claims of Citus tables and sharded inboxes, one statement each
 *		(claim_routed.c).
 */
#ifndef INBOX_CLAIM_ROUTED_H
#define INBOX_CLAIM_ROUTED_H

#include "inbox_info.h"
#include "signature.h"

extern Datum claim_routed_shard_value(const InboxInfo *inbox, Oid argtype, Datum value);
extern Datum claim_routed_shard_key(FunctionCallInfo fcinfo, int argno, const InboxInfo *inbox);
extern const Datum *claim_routed_shard_arg(FunctionCallInfo fcinfo, const CallSignature *sig,
										   const InboxInfo *inbox, Datum *value);
extern bool claim_routed(InboxInfo *inbox, Datum message_id, const Datum *shard_key);
extern bool claim_routed_held(InboxInfo *inbox, Datum message_id, const Datum *shard_key,
							  TimestampTz now);
extern bool claim_routed_may_skip(const InboxInfo *inbox);

#endif							/* INBOX_CLAIM_ROUTED_H */
