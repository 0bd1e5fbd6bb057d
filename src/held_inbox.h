/*
 * held_inbox.h
 *		The state of direct claims into one inbox, kept across the rows of one
 *		statement (held_inbox.c).
 */
#ifndef INBOX_HELD_INBOX_H
#define INBOX_HELD_INBOX_H

#include "direct_access.h"

typedef struct HeldInbox HeldInbox;

extern HeldInbox *held_inbox_create(MemoryContext cxt);
extern DirectInsert *held_inbox_open(HeldInbox *held, Oid relid);
extern void held_inbox_release(HeldInbox *held);

#endif							/* INBOX_HELD_INBOX_H */
