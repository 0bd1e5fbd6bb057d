/*
 * inbox_sql.h
 *		The SQL path: every statement against an inbox (inbox_sql.c).
 */
#ifndef INBOX_INBOX_SQL_H
#define INBOX_INBOX_SQL_H

#include "inbox_info.h"

/* The names of the columns, by InboxColumn. */
extern const char *const inbox_sql_column_names[INBOX_NUM_COLUMNS];

extern SPIPlanPtr inbox_sql_plan(InboxInfo *inbox, InboxStatement which);
extern int	inbox_sql_execute(InboxInfo *inbox, InboxStatement which, Datum *values, const char *nulls);
extern int	inbox_sql_execute_key(InboxInfo *inbox, InboxStatement which, const Datum *shard,
								  Datum *values, const char *nulls);
extern void inbox_sql_require_column(const InboxInfo *inbox, InboxColumn column);

#endif							/* INBOX_INBOX_SQL_H */
