/*
 * inbox.h
 *		The terms, SQLSTATEs and limits every module of idempotent_inbox shares.
 *		Types live with the module that owns them: an inbox's cache entry in
 *		inbox_info.h, a claim row in claim_row.h, a dirty look in direct_access.h.
 *
 * Terms, used the same way in every file:
 *	inbox		an ordinary table of claims for one consumer, listed in the registry
 *	claim		the row that says "this message id is being or has been applied"
 *	effect		the business change applied in the same transaction as the claim
 *	duplicate	a delivery whose id is already claimed
 *	lease		a claim held for a bounded time by one attempt (lease_until, token);
 *				a lease past its time may be taken over by another attempt
 *	fingerprint	a hash of a message's payload stored with its claim, so that an id
 *				redelivered with a different payload is refused, not deduplicated
 *	watermark	a stream partition's applied offset (stream.c): a message at or below
 *				it was applied already
 */
#ifndef INBOX_H
#define INBOX_H

#include "postgres.h"

#include "fmgr.h"

/*
 * Our own SQLSTATEs: the standard class, and a subclass starting with I, which
 * the standard leaves to implementations.
 */
#define ERRCODE_IDEMPOTENCY_KEY_REUSED	MAKE_SQLSTATE('2','2','I','0','1')
#define ERRCODE_STALE_LEASE_TOKEN		MAKE_SQLSTATE('5','5','I','0','1')

/* Longest retention window; longer ones would leave the range of timestamps. */
#define MAX_RETENTION_YEARS 1000

/* Retries of a claim's read-decide-write loop before it is deemed stuck. */
#define CLAIM_MAX_RETRIES 1000

/* Longest message id we accept, in bytes; keeps claims well inside an index tuple. */
#define INBOX_MAX_ID_BYTES 1024

#endif							/* INBOX_H */
