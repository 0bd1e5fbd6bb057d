/*
 * shape_cache.h
 *		The statements generated for a user's table and column set, kept per
 *		backend (shape_cache.c); used by upsert and transition.
 */
#ifndef INBOX_SHAPE_CACHE_H
#define INBOX_SHAPE_CACHE_H

#include "postgres.h"

#include "access/attnum.h"
#include "nodes/bitmapset.h"
#include "utils/palloc.h"
#include "utils/relcache.h"

/* Statements generated for one table and column set, kept by shape_cache_store. */
#define SHAPE_MAX_STATEMENTS 4

typedef struct ShapeStatements
{
	MemoryContext cxt;
	Oid			keyindex;		/* the unique index the key columns are */
	Bitmapset  *keys;			/* its columns */
	char	   *sql[SHAPE_MAX_STATEMENTS];
	bool		direct_update;	/* direct_access_update_possible, when built */
	bool		direct_insert;	/* direct_access_possible for these columns (upsert) */
	bool		insert_first_safe;	/* direct_access_insert_first_safe (upsert) */
	int			fresh_rate;		/* recent share of calls that inserted (upsert) or
								 * moved (transition), in 1/1024ths */
	int			update_rate;	/* recent share of upserts that updated */
} ShapeStatements;

extern void shape_cache_init(void);
extern ShapeStatements *shape_cache_lookup(Relation rel, int kind, Bitmapset *columns,
										   Bitmapset *requested_keys, AttrNumber extra);
extern void shape_cache_store(Relation rel, int kind, Bitmapset *columns,
							  Bitmapset *requested_keys, AttrNumber extra,
							  const ShapeStatements *statements);
extern void shape_cache_record(Relation rel, int kind, Bitmapset *columns,
							   Bitmapset *requested_keys, AttrNumber extra,
							   bool fresh, bool updated);

/* Shape kinds: whose statements an entry holds. */
#define SHAPE_UPSERT 1
#define SHAPE_TRANSITION 2

#endif							/* INBOX_SHAPE_CACHE_H */
