/*
 * shape_cache.c
 *		The statements upsert and transition generate, kept per table and shape:
 *		the columns a call names, the key it asks for, and its version or state
 *		column.
 *
 * Building them costs catalog lookups and string formatting that a call would
 * otherwise pay every time.  A relcache invalidation of the table (any DDL on it
 * or its indexes, a rename) drops its entries, and any change to a schema or an
 * operator drops them all (forget_all_shapes); callers look up only once the table
 * is locked, so what they find matches the table they hold.  An invalidation can
 * arrive at any lock a caller takes while it uses the statements, and a trigger
 * fired by its statements may call upsert or transition on the same table,
 * replacing or dropping the entry: so an entry is never freed when it is dropped
 * or replaced, only retired (retired.c) and freed when the transaction ends, when
 * no call can be using it.  The protocol every cache of the extension follows.
 * The statements themselves are plain text; the plans statement_cache keeps for
 * them are keyed by text and parameter types and re-planned by the plancache when
 * the table changes.
 */
#include "postgres.h"

#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/syscache.h"

#include "adaptive.h"
#include "inbox.h"
#include "relcache_callbacks.h"
#include "retired.h"
#include "shape_cache.h"

typedef struct ShapeKey
{
	Oid			relid;
	int			kind;			/* which caller's statements */
	AttrNumber	extra;			/* version or state column, or 0 */
	uint32		columns_hash;	/* of the column set */
	uint32		keys_hash;		/* of the requested key columns (0: primary key) */
} ShapeKey;

struct ShapeEntry
{
	ShapeKey	key;
	Bitmapset  *columns;		/* exact sets, to tell hash collisions apart */
	Bitmapset  *requested_keys;
	ShapeStatements *statements;	/* all of it in statements->cxt */
};

static HTAB *ShapeCache = NULL;

static void
forget_shapes(Datum arg, Oid relid)
{
	HASH_SEQ_STATUS status;
	struct ShapeEntry *entry;

	if (ShapeCache == NULL)
		return;
	hash_seq_init(&status, ShapeCache);
	while ((entry = hash_seq_search(&status)) != NULL)
	{
		if (OidIsValid(relid) && entry->key.relid != relid)
			continue;
		retired_add_context(entry->statements->cxt);
		hash_search(ShapeCache, &entry->key, HASH_REMOVE, NULL);
	}
}

/*
 * The statements name the table's schema and the operators' schemas by name,
 * which a relcache invalidation of the table does not cover: after ALTER SCHEMA
 * RENAME (or an operator moved by ALTER OPERATOR ... SET SCHEMA) a kept
 * statement would name whatever now has the old name, another table or another
 * operator.  Any change to a schema or an operator drops every entry.
 */
static void
forget_all_shapes(Datum arg, int cacheid, uint32 hashvalue)
{
	forget_shapes(arg, InvalidOid);
}

void
shape_cache_init(void)
{
	HASHCTL		ctl;

	ctl.keysize = sizeof(ShapeKey);
	ctl.entrysize = sizeof(struct ShapeEntry);
	ctl.hcxt = CacheMemoryContext;
	ShapeCache = hash_create("idempotent_inbox shapes", 32, &ctl,
							 HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	relcache_callback_register(forget_shapes);
	CacheRegisterSyscacheCallback(NAMESPACEOID, forget_all_shapes, (Datum) 0);
	CacheRegisterSyscacheCallback(OPEROID, forget_all_shapes, (Datum) 0);
	/* Key matches name the index's collation (shape_append_key_match). */
	CacheRegisterSyscacheCallback(COLLOID, forget_all_shapes, (Datum) 0);
}

static uint32
columns_hash(const Bitmapset *set)
{
	return set == NULL ? 0 : bms_hash_value(set);
}

/* Zeroed first: the key is hashed as bytes, padding included. */
static void
shape_key(ShapeKey *key, Relation rel, int kind, Bitmapset *columns,
		  Bitmapset *requested_keys, AttrNumber extra)
{
	memset(key, 0, sizeof(ShapeKey));
	key->relid = RelationGetRelid(rel);
	key->kind = kind;
	key->extra = extra;
	key->columns_hash = columns_hash(columns);
	key->keys_hash = columns_hash(requested_keys);
}

/*
 * The statements cached for this shape, or NULL.  On NULL the caller builds them
 * and hands them to shape_cache_store.
 */
ShapeStatements *
shape_cache_lookup(Relation rel, int kind, Bitmapset *columns, Bitmapset *requested_keys,
				   AttrNumber extra)
{
	ShapeKey	key;
	struct ShapeEntry *entry;

	shape_key(&key, rel, kind, columns, requested_keys, extra);

	entry = hash_search(ShapeCache, &key, HASH_FIND, NULL);
	if (entry != NULL && bms_equal(entry->columns, columns) &&
		bms_equal(entry->requested_keys, requested_keys))
		return entry->statements;
	return NULL;
}

/*
 * Keep statements for this shape: copies them into a context of their own.  A
 * colliding entry for another shape is replaced.
 */
void
shape_cache_store(Relation rel, int kind, Bitmapset *columns, Bitmapset *requested_keys,
				  AttrNumber extra, const ShapeStatements *statements)
{
	ShapeKey	key;
	struct ShapeEntry *entry;
	bool		found;
	MemoryContext cxt;
	MemoryContext oldcxt;
	ShapeStatements *kept;

	shape_key(&key, rel, kind, columns, requested_keys, extra);

	cxt = AllocSetContextCreate(CacheMemoryContext, "idempotent_inbox shape", ALLOCSET_SMALL_SIZES);
	oldcxt = MemoryContextSwitchTo(cxt);
	kept = palloc0(sizeof(ShapeStatements));
	kept->cxt = cxt;
	kept->keyindex = statements->keyindex;
	kept->keys = bms_copy(statements->keys);
	kept->direct_update = statements->direct_update;
	kept->direct_insert = statements->direct_insert;
	kept->insert_first_safe = statements->insert_first_safe;
	for (int i = 0; i < SHAPE_MAX_STATEMENTS; i++)
		kept->sql[i] = statements->sql[i] ? pstrdup(statements->sql[i]) : NULL;
	columns = bms_copy(columns);
	requested_keys = bms_copy(requested_keys);
	MemoryContextSwitchTo(oldcxt);

	entry = hash_search(ShapeCache, &key, HASH_ENTER, &found);
	if (found)
		retired_add_context(entry->statements->cxt);
	entry->columns = columns;
	entry->requested_keys = requested_keys;
	entry->statements = kept;
}

/*
 * Note whether a call through this shape inserted (or moved) a row, or updated
 * one: moving averages, each call weighing 1/16, that let the callers pick their
 * cheaper order of steps.
 */
void
shape_cache_record(Relation rel, int kind, Bitmapset *columns, Bitmapset *requested_keys,
				   AttrNumber extra, bool fresh, bool updated)
{
	ShapeKey	key;
	struct ShapeEntry *entry;

	shape_key(&key, rel, kind, columns, requested_keys, extra);
	entry = hash_search(ShapeCache, &key, HASH_FIND, NULL);
	if (entry != NULL && bms_equal(entry->columns, columns) &&
		bms_equal(entry->requested_keys, requested_keys))
	{
		share_record(&entry->statements->fresh_rate, fresh);
		share_record(&entry->statements->update_rate, updated);
	}
}

