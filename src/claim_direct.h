/*
 * claim_direct.h
 *		A claim made without the executor (claim_direct.c).
 */
#ifndef INBOX_CLAIM_DIRECT_H
#define INBOX_CLAIM_DIRECT_H

#include "inbox_info.h"
#include "held_inbox.h"

typedef enum ClaimDirectResult
{
	CLAIM_DIRECT_UNAVAILABLE,
	CLAIM_DIRECT_CLAIMED,
	CLAIM_DIRECT_DUPLICATE
} ClaimDirectResult;

extern ClaimDirectResult claim_direct(InboxInfo *inbox, Datum message_id, bool probe_first,
									  HeldInbox *held);

#endif							/* INBOX_CLAIM_DIRECT_H */
