/*
 * claim_row.h
 *		One claim as a dirty snapshot sees it (claim_row.c).
 */
#ifndef INBOX_CLAIM_ROW_H
#define INBOX_CLAIM_ROW_H

#include "access/htup.h"
#include "access/tupdesc.h"
#include "utils/jsonb.h"

#include "compat.h"
#include "direct_access.h"
#include "inbox_info.h"

/* A claim's row, and the columns asked for. */
typedef struct ClaimRow
{
	RowState	state;
	Oid			relid;			/* where it was read: the inbox, or a shard of it */
	DirtyWait	wait;
	ItemPointerData tid;
	/* The columns below are read only when asked for, and only when present. */
	TimestampTz claimed_at;
	bytea	   *fingerprint;	/* NULL when none was given */
	Jsonb	   *result;			/* NULL when none is stored */
	bool		has_token;
	int64		token;
	bool		leased;			/* lease_until is set: an attempt is running */
	TimestampTz lease_until;
	int32		holder_pid;		/* 0 unless the lease is session-bound */
	TimestampTz holder_started;
} ClaimRow;


extern void claim_row_read(InboxInfo *inbox, Datum message_id, bool columns, ClaimRow *row);
extern void claim_row_read_key(InboxInfo *inbox, Datum message_id, const Datum *shard,
							   bool columns, ClaimRow *row);
extern void claim_row_read_for_claim(InboxInfo *inbox, Datum message_id, ClaimRow *row);
extern void claim_row_wait(InboxInfo *inbox, const ClaimRow *row);
extern bool claim_row_stored(InboxInfo *inbox, Datum message_id, const Datum *shard,
							 uint64 stored);
extern void claim_row_check_written(InboxInfo *inbox, Datum message_id);
extern void claim_row_check_shard(InboxInfo *inbox, HeapTuple row, TupleDesc desc,
								  Datum message_id, Datum shard_key);
pg_noreturn extern void claim_row_suppressed(InboxInfo *inbox, Datum message_id);
extern void claim_row_retry(InboxInfo *inbox, Datum message_id, int *retries);
extern bool claim_row_expired(const InboxInfo *inbox, const ClaimRow *row, TimestampTz now);
extern bool claim_row_lease_live(const ClaimRow *row, TimestampTz now);
extern bool claim_row_quarantined(const ClaimRow *row);

#endif							/* INBOX_CLAIM_ROW_H */
