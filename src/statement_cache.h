/*
 * statement_cache.h
 *		Prepared statements keyed by their text (statement_cache.c).
 */
#ifndef INBOX_STATEMENT_CACHE_H
#define INBOX_STATEMENT_CACHE_H

#include "fmgr.h"

typedef struct StatementPlan StatementPlan;
extern void statement_cache_init(void);
extern Oid *statement_cache_param_types(const char *source, int nargs, const Oid *argtypes,
										bool batch);
extern StatementPlan *statement_cache_get(const char *source, int nargs, const Oid *argtypes);
extern StatementPlan *statement_cache_get_batch(const char *source, int nargs,
												const Oid *argtypes);
extern void statement_cache_convert_args(StatementPlan *entry, Datum *values, const char *nulls);
extern Oid	statement_cache_param_type(const StatementPlan *entry, int i);
extern void statement_cache_execute(StatementPlan *entry, Datum *values, const char *nulls);
extern void statement_cache_pin(StatementPlan *entry);
extern void statement_cache_unpin(StatementPlan *entry);

#endif							/* INBOX_STATEMENT_CACHE_H */
