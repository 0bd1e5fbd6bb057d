/*
 * claim_row.h
 *		One claim as a dirty snapshot sees it (claim_row.c).
 */
#ifndef INBOX_CLAIM_ROW_H
#define INBOX_CLAIM_ROW_H

#include "compat.h"
#include "inbox.h"

extern void claim_row_read(InboxInfo *inbox, Datum message_id, bool columns, ClaimRow *row);
extern void claim_row_read_for_claim(InboxInfo *inbox, Datum message_id, ClaimRow *row);
extern void claim_row_wait(InboxInfo *inbox, const ClaimRow *row);
extern bool claim_row_stored(InboxInfo *inbox, Datum message_id, uint64 stored);
extern void claim_row_check_written(InboxInfo *inbox, Datum message_id);
pg_noreturn extern void claim_row_suppressed(InboxInfo *inbox, Datum message_id);
extern void claim_row_retry(InboxInfo *inbox, Datum message_id, int *retries);
extern bool claim_row_expired(const InboxInfo *inbox, const ClaimRow *row, TimestampTz now);
extern bool claim_row_lease_live(const ClaimRow *row, TimestampTz now);
extern bool claim_row_quarantined(const ClaimRow *row);

#endif							/* INBOX_CLAIM_ROW_H */
