/*
 * claim.h
 *		Claims: claim, try_claim and claim_many (claim.c).
 */
#ifndef INBOX_CLAIM_H
#define INBOX_CLAIM_H

#include "inbox.h"

extern bool claim_one(InboxInfo *inbox, Datum message_id, bytea *fingerprint);
extern bool claim_one_connecting(InboxInfo *inbox, Datum message_id);

#endif							/* INBOX_CLAIM_H */
