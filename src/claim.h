/*
 * claim.h
 *		Claims: claim, try_claim, claim_many and the batches of claim_apply_many
 *		(claim.c).
 */
#ifndef INBOX_CLAIM_H
#define INBOX_CLAIM_H

#include "fmgr.h"
#include "nodes/execnodes.h"
#include "utils/array.h"
#include "utils/tuplestore.h"

#include "inbox_info.h"
#include "held_inbox.h"
#include "signature.h"

/* A batch of message ids, as claim_many and claim_apply_many take it. */
typedef struct ClaimBatch
{
	int			nids;
	Datum	   *given;			/* the ids as passed, of the declared element type */
	Datum	   *keys;			/* the same as keys of the inbox */
	ArrayType  *array;			/* keys, as one array of the inbox's key type */
	bool	   *fresh;			/* after claim_batch_claim: this position claimed its id */
	bool	   *quarantined;	/* set by claim_apply_many before its statement runs */
} ClaimBatch;

extern bool claim_one(InboxInfo *inbox, Datum message_id, bytea *fingerprint);
extern bool claim_quarantined(InboxInfo *inbox, Datum message_id, const Datum *shard);
extern bool claim_quarantined_after_claim(InboxInfo *inbox, Datum message_id,
										  const Datum *shard);
extern const char *claim_probe_status(InboxInfo *inbox, Datum id, const Datum *shard,
									  bool *held);
extern const char *claim_status_of_insert(InboxInfo *inbox, Datum id, const Datum *shard);
extern bool claim_one_connecting(InboxInfo *inbox, Datum message_id, HeldInbox *held);
extern void claim_batch_read(ClaimBatch *batch, FunctionCallInfo fcinfo,
							 const CallSignature *sig, InboxInfo *inbox);
extern void claim_batch_claim(ClaimBatch *batch, InboxInfo *inbox, const Datum *shard_key);
extern ArrayType *claim_batch_fresh_keys(const ClaimBatch *batch, const InboxInfo *inbox);
extern void claim_check_set_context(FunctionCallInfo fcinfo, const char *function);
extern Tuplestorestate *claim_result_store(ReturnSetInfo *rsinfo, TupleDesc tupdesc);

#endif							/* INBOX_CLAIM_H */
