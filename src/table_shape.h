/*
 * table_shape.h
 *		Catalog facts about a user's table and SQL fragments built from them
 *		(table_shape.c); shared by upsert, transition and the state machines.
 */
#ifndef INBOX_TABLE_SHAPE_H
#define INBOX_TABLE_SHAPE_H

#include "postgres.h"

#include "fmgr.h"
#include "lib/stringinfo.h"
#include "nodes/bitmapset.h"
#include "nodes/parsenodes.h"
#include "storage/lockdefs.h"
#include "utils/jsonb.h"
#include "utils/palloc.h"
#include "utils/relcache.h"

extern Relation shape_open(FunctionCallInfo fcinfo, int argno, AclMode rights, bool must_own,
							LOCKMODE lockmode, AclMode *held);
extern Relation shape_open_relid(Oid relid, AclMode rights, bool must_own, LOCKMODE lockmode,
								 AclMode *held);
extern void shape_check_columns(Relation rel, AclMode rights, AclMode held, Bitmapset *columns);
extern char *shape_qualname(Relation rel);
extern char *shape_target(Relation rel);
extern AttrNumber shape_column(Relation rel, const char *name);
extern const char *shape_column_name(Relation rel, AttrNumber attnum);
extern Oid	shape_column_type(Relation rel, AttrNumber attnum);
extern char *shape_state_text(Relation rel, AttrNumber attnum, const char *state, Datum *value);
extern char *shape_value_text(Relation rel, AttrNumber attnum, Datum value);
extern void shape_check_assignable(Relation rel, Bitmapset *columns, bool insert);
extern Bitmapset *shape_generated_columns(Relation rel);
extern Jsonb *shape_jsonb_arg(FunctionCallInfo fcinfo, int argno, const char *argname,
							  const char *example);
extern Bitmapset *shape_jsonb_columns(Relation rel, Jsonb *object);
extern Oid	shape_unique_key(Relation rel, Bitmapset *columns);
extern Bitmapset *shape_index_columns(Oid indexoid);
extern char *shape_operator(Oid opno);
extern char *shape_less_than(Relation rel, AttrNumber attnum);
extern void shape_append_key_match(StringInfo buf, Oid indexoid, const char *alias,
								   const int *params);
extern int	shape_bind_columns(Relation rel, Bitmapset *columns, int first, int *params,
							   Oid *types, Datum *values, char *nulls,
							   const Datum *row, const bool *rownulls);
extern void shape_append_params(StringInfo buf, Bitmapset *columns, const int *params);
extern void shape_append_columns(StringInfo buf, Relation rel, Bitmapset *columns,
								 const char *prefix);

#endif							/* INBOX_TABLE_SHAPE_H */
