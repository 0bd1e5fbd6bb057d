/*
 * held_inbox.h
 *		An inbox kept open for direct claims across the rows of one statement
 *		(held_inbox.c).
 */
#ifndef INBOX_HELD_INBOX_H
#define INBOX_HELD_INBOX_H

#include "direct_access.h"

typedef struct HeldInbox HeldInbox;

extern HeldInbox *held_inbox_create(MemoryContext cxt);
extern DirectInsert *held_inbox_open(HeldInbox *held, Oid relid);

#endif							/* INBOX_HELD_INBOX_H */
