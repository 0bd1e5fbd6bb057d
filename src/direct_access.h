/*
 * direct_access.h
 *		Reading and writing tables without the executor, under the checklist at
 *		the head of direct_access.c.
 */
#ifndef INBOX_DIRECT_ACCESS_H
#define INBOX_DIRECT_ACCESS_H

#include "access/attnum.h"
#include "storage/itemptr.h"
#include "utils/relcache.h"

#include "inbox.h"

struct ScanKeyData;
struct TupleTableSlot;

/*
 * Who to wait for before looking at a row again (direct_access.c): the
 * transaction inserting or changing it, and for a speculative insertion its
 * token, which is released as soon as that insertion is confirmed or killed.
 */
typedef struct DirtyWait
{
	TransactionId xid;
	uint32		spec_token;
} DirtyWait;

/*
 * A row as a dirty snapshot sees it (claim_row.c reads claims so).  Another
 * transaction may be inserting it (a claim not yet committed) or changing it
 * (finishing, taking over, purging); the DirtyWait names that transaction, to
 * wait for or to report.
 */
typedef enum RowState
{
	ROW_ABSENT,
	ROW_PRESENT,				/* committed, or written by this transaction */
	ROW_INSERTING,
	ROW_CHANGING
} RowState;

extern bool direct_access_possible(Relation rel, const AttrNumber *filled, int nfilled);
extern bool direct_access_sole_arbiter(Relation rel, Oid keyindex);
extern bool direct_access_insert_first_safe(Relation rel, Oid arbiter);
extern bool direct_access_allowed(Oid relid);
extern bool direct_access_checks_pass(Relation rel, struct TupleTableSlot *slot);
extern RowState direct_access_dirty_lookup(Relation heap, Relation index,
										   struct ScanKeyData *keys, int nkeys,
										   DirtyWait *wait, ItemPointer tid,
										   void (*on_present) (struct TupleTableSlot *slot, void *arg),
										   void *arg);
extern void direct_access_wait(Relation heap, const DirtyWait *wait, ItemPointer tid);
extern bool direct_access_speculative_insert(Relation rel, Oid arbiter, struct TupleTableSlot *slot);

/* A speculative insertion's surroundings, kept across rows by held_inbox.c. */
typedef struct DirectInsert
{
	Relation	rel;
	struct EState *estate;
	struct ResultRelInfo *rri;
	struct TupleTableSlot *slot;	/* the row to insert is built here */
	Oid		   *indexids;		/* kept state only: rel's indexes, as in rri */
} DirectInsert;

extern void direct_insert_begin(DirectInsert *di, Relation rel);
extern void direct_insert_begin_kept(DirectInsert *di, Relation rel);
extern void direct_insert_detach(DirectInsert *di);
extern void direct_insert_attach(DirectInsert *di, Oid relid);
extern void direct_insert_free(DirectInsert *di);
extern bool direct_insert_speculative(DirectInsert *di, Oid arbiter);
extern void direct_insert_end(DirectInsert *di);
extern bool direct_access_update(Relation rel, ItemPointer tid, struct TupleTableSlot *slot);
extern bool direct_access_fetch_allowed(Relation rel);
extern bool direct_access_fetch(Relation rel, Oid keyindex, const Datum *row, const bool *rownulls,
								Datum *stored, bool *storednulls, ItemPointer tid);
extern bool direct_access_update_possible(Relation rel);

/* What a direct write of a row did. */
typedef enum DirectWrite
{
	DIRECT_UNAVAILABLE,			/* nothing: take the SQL path */
	DIRECT_INSERTED,
	DIRECT_CONFLICT				/* nothing: the arbiter's key is taken */
} DirectWrite;

extern DirectWrite direct_access_insert_row(Relation rel, Oid arbiter, int natts,
											const Datum *values, const bool *nulls,
											bool look_first);
extern bool direct_access_update_row(Relation rel, int natts, ItemPointer tid,
									 CommandId read_cid, const Datum *values,
									 const bool *nulls);

#endif							/* INBOX_DIRECT_ACCESS_H */
