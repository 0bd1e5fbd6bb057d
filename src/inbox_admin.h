/*
 * inbox_admin.h
 *		What creating, dropping and configuring an inbox shares with an outbox's
 *		administration (inbox_admin.c, outbox.c).
 */
#ifndef INBOX_INBOX_ADMIN_H
#define INBOX_INBOX_ADMIN_H

#include "postgres.h"

#include "fmgr.h"
#include "datatype/timestamp.h"

extern void admin_check_retention(Interval *retention, const char *kept);
extern Oid	admin_new_table_name(FunctionCallInfo fcinfo, const char *what,
								 const char *why_permanent, char **relname, char **qualname);
extern void admin_registry_write(FunctionCallInfo fcinfo, const char *registry_name,
								 const char *sql, int nargs, Oid *argtypes, Datum *values,
								 const char *nulls, int expected);
extern void admin_check_owner(FunctionCallInfo fcinfo, int argno);

#endif							/* INBOX_INBOX_ADMIN_H */
