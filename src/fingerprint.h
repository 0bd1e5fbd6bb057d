/*
 * fingerprint.h
 *		Fingerprints of a message's payload, and their check (fingerprint.c).
 */
#ifndef INBOX_FINGERPRINT_H
#define INBOX_FINGERPRINT_H

#include "claim_row.h"

extern bytea *fingerprint_arg(FunctionCallInfo fcinfo, int argno);
extern void fingerprint_check(InboxInfo *inbox, Datum message_id, const ClaimRow *row,
							  const bytea *fingerprint);

#endif							/* INBOX_FINGERPRINT_H */
