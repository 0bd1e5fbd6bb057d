/*
 * inbox_shape.h
 *		What a table must look like to be an inbox (inbox_shape.c).
 */
#ifndef INBOX_INBOX_SHAPE_H
#define INBOX_INBOX_SHAPE_H

#include "compat.h"
#include "inbox.h"

extern char *inbox_shape_problem(Relation rel, InboxInfo *inbox);
pg_noreturn extern void inbox_shape_error(Relation rel, const char *problem);
extern bool inbox_shape_direct_ok(Relation rel, const InboxInfo *inbox);

#endif							/* INBOX_INBOX_SHAPE_H */
