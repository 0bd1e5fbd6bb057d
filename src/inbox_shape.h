/*
 * inbox_shape.h
 *		What a table must look like to be an inbox (inbox_shape.c).
 */
#ifndef INBOX_INBOX_SHAPE_H
#define INBOX_INBOX_SHAPE_H

#include "datatype/timestamp.h"

#include "compat.h"
#include "inbox_info.h"

/*
 * The CHECK constraint that marks a sharded inbox as one on every node of a
 * Citus cluster, where the registry has no row for it.
 */
#define INBOX_MARKER "idempotent_inbox"

/*
 * And the CHECK constraint that carries a sharded inbox's retention there:
 * CHECK ('<window>'::interval IS NOT NULL), always true.
 */
#define INBOX_WINDOW_MARKER "idempotent_inbox_window"

extern char *inbox_shape_problem(Relation rel, InboxInfo *inbox, const char *shard_key);
extern char *inbox_shape_shard_key(Relation rel);
extern bool inbox_shape_has_marker(Relation rel);
extern bool inbox_shape_marked_window(Relation rel, Interval *window);
pg_noreturn extern void inbox_shape_error(Relation rel, const char *problem, bool sharded);
extern bool inbox_shape_direct_ok(Relation rel, const InboxInfo *inbox);

#endif							/* INBOX_INBOX_SHAPE_H */
