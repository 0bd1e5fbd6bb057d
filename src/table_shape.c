/*
 * table_shape.c
 *		What upsert, transition and guard_transitions need to know about a user's
 *		table, read from the catalogs, and the SQL fragments built from it.
 *
 * Names in generated SQL come only from the catalogs and are quoted; operators are
 * written OPERATOR(schema.op) with the operator the index or type cache names, so
 * nothing depends on the caller's search_path and nothing a user writes is ever
 * spliced in.  Values always travel as parameters.
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/relation.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/catalog.h"
#include "catalog/namespace.h"
#include "catalog/pg_am.h"
#include "catalog/pg_class.h"
#include "catalog/pg_collation.h"
#include "catalog/pg_index.h"
#include "catalog/pg_operator.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "storage/sinval.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/syscache.h"
#include "utils/typcache.h"

#include "compat.h"
#include "table_shape.h"

/*
 * Which relations a target may be.  Plain tables, temporary (this session's) and
 * unlogged ones, partitions and inheritance children included, and partitioned
 * tables, whose rows only the executor can route: they always take the SQL path.
 * Everything else (views, materialized views, foreign tables, sequences, indexes,
 * composite types, TOAST tables) holds no rows these functions could write, and the
 * system catalogs are not for them to write.  Checked from pg_class before any lock,
 * so that a call naming such a relation fails at once, and again once it is open.
 */
static void
CheckTargetKind(Oid relid, Form_pg_class form)
{
	if (form->relkind != RELKIND_RELATION && form->relkind != RELKIND_PARTITIONED_TABLE)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not a table", NameStr(form->relname)),
				 errdetail_relkind_not_supported(form->relkind),
				 errhint("Pass a plain or partitioned table.")));
	if (IsSystemClass(relid, form))
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is a system catalog", NameStr(form->relname)),
				 errdetail("The functions of idempotent_inbox write only user tables.")));
	if (form->relpersistence == RELPERSISTENCE_TEMP &&
		!isTempOrTempToastNamespace(form->relnamespace))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot access temporary tables of other sessions")));
}

/*
 * The caller must own the table, or hold every right in `rights` on the table or
 * on at least one of its columns (column privileges are checked exactly once the
 * columns a call names are known: shape_check_columns).  Returns the rights held
 * on the whole table.
 */
static AclMode
CheckTargetRights(Oid relid, const char *relname, AclMode rights, bool must_own)
{
	Oid			userid = GetUserId();
	AclMode		held;

	if (must_own)
	{
		if (!compat_table_ownercheck(relid, userid))
			aclcheck_error(ACLCHECK_NOT_OWNER, OBJECT_TRIGGER, relname);
		return rights;
	}
	held = pg_class_aclmask(relid, userid, rights, ACLMASK_ALL);
	for (int bit = 0; bit < N_ACL_RIGHTS; bit++)
	{
		AclMode		right = ((AclMode) 1) << bit;

		if ((rights & right) && !(held & right) &&
			pg_attribute_aclcheck_all(relid, userid, right, ACLMASK_ANY) != ACLCHECK_OK)
			aclcheck_error(ACLCHECK_NO_PRIV, OBJECT_TABLE, relname);
	}
	return held;
}

/*
 * A table named by OID is still in its schema: the generated statements name it
 * there, which needs USAGE, so the direct read must not answer without it either.
 */
static void
CheckSchemaUsage(Oid nspid)
{
	if (compat_namespace_aclcheck(nspid, GetUserId(), ACL_USAGE) != ACLCHECK_OK)
		aclcheck_error(ACLCHECK_NO_PRIV, OBJECT_SCHEMA, get_namespace_name(nspid));
}

/* The relation, its kind and the caller's rights, from pg_class: no lock taken. */
static AclMode
CheckTarget(Oid relid, AclMode rights, bool must_own)
{
	HeapTuple	tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	FormData_pg_class form;

	if (!HeapTupleIsValid(tuple))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation with OID %u does not exist", relid)));
	form = *(Form_pg_class) GETSTRUCT(tuple);
	ReleaseSysCache(tuple);

	CheckTargetKind(relid, &form);
	CheckSchemaUsage(form.relnamespace);
	return CheckTargetRights(relid, NameStr(form.relname), rights, must_own);
}

/*
 * Open a target table: rights first, then the lock, as RangeVarGetRelidExtended
 * does with a permission callback, so that a role without rights never queues for
 * a lock on a table it cannot touch (and every later writer behind it).  Anything
 * may change while we wait for the lock: if an invalidation arrived, the relation
 * is looked up and the rights checked again, now under the lock.
 */
Relation
shape_open_relid(Oid relid, AclMode rights, bool must_own, LOCKMODE lockmode, AclMode *held)
{
	uint64		inval_count = SharedInvalidMessageCounter;
	AclMode		table_rights = CheckTarget(relid, rights, must_own);
	Relation	rel;

	LockRelationOid(relid, lockmode);
	if (inval_count != SharedInvalidMessageCounter)
		table_rights = CheckTarget(relid, rights, must_own);
	rel = relation_open(relid, NoLock);
	/* Under the lock nothing can change any more; the relcache agrees with pg_class. */
	CheckTargetKind(relid, rel->rd_rel);
	if (held != NULL)
		*held = table_rights;
	return rel;
}

Relation
shape_open(FunctionCallInfo fcinfo, int argno, AclMode rights, bool must_own,
		   LOCKMODE lockmode, AclMode *held)
{
	if (PG_ARGISNULL(argno))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("target must not be null")));
	return shape_open_relid(PG_GETARG_OID(argno), rights, must_own, lockmode, held);
}

/*
 * Column privileges, exactly: each right in `rights` that the caller does not hold
 * on the whole table (held) it must hold on every column in `columns`.  Checked
 * before any row is read, so that neither path answers from columns the caller
 * could not name in a statement.
 */
void
shape_check_columns(Relation rel, AclMode rights, AclMode held, Bitmapset *columns)
{
	Oid			relid = RelationGetRelid(rel);
	Oid			userid = GetUserId();

	for (int bit = 0; bit < N_ACL_RIGHTS; bit++)
	{
		AclMode		right = ((AclMode) 1) << bit;
		int			attnum = -1;

		if (!(rights & right) || (held & right))
			continue;
		while ((attnum = bms_next_member(columns, attnum)) >= 0)
			if (pg_attribute_aclcheck(relid, attnum, userid, right) != ACLCHECK_OK)
				aclcheck_error_col(ACLCHECK_NO_PRIV, OBJECT_TABLE, RelationGetRelationName(rel),
								   NameStr(TupleDescAttr(RelationGetDescr(rel), attnum - 1)->attname));
	}
}

/*
 * The table as generated statements name it.  ONLY for a plain table: its unique
 * indexes, ON CONFLICT and the direct read all see its own rows and not those of
 * inheritance children, so SELECT and UPDATE must not either.  A partitioned table
 * has no rows of its own: its partitions' are its rows.
 */
char *
shape_target(Relation rel)
{
	char	   *qualname = shape_qualname(rel);

	return rel->rd_rel->relkind == RELKIND_PARTITIONED_TABLE ? qualname :
		psprintf("ONLY %s", qualname);
}

char *
shape_qualname(Relation rel)
{
	return quote_qualified_identifier(get_namespace_name(RelationGetNamespace(rel)),
									  RelationGetRelationName(rel));
}

/* The attribute number of a user column, or 42703 naming the table. */
AttrNumber
shape_column(Relation rel, const char *name)
{
	TupleDesc	desc = RelationGetDescr(rel);

	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		if (!att->attisdropped && strcmp(NameStr(att->attname), name) == 0)
			return att->attnum;
	}
	/* No column has a longer name: show only as much as one could have. */
	if (strlen(name) >= NAMEDATALEN)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_COLUMN),
				 errmsg("column \"%.*s...\" of relation \"%s\" does not exist",
						pg_mbcliplen(name, strlen(name), NAMEDATALEN - 1), name,
						RelationGetRelationName(rel)),
				 errdetail("Column names are at most %d bytes long.", NAMEDATALEN - 1)));
	ereport(ERROR,
			(errcode(ERRCODE_UNDEFINED_COLUMN),
			 errmsg("column \"%s\" of relation \"%s\" does not exist",
					name, RelationGetRelationName(rel))));
	return InvalidAttrNumber;	/* keep compiler quiet */
}

const char *
shape_column_name(Relation rel, AttrNumber attnum)
{
	return quote_identifier(NameStr(TupleDescAttr(RelationGetDescr(rel), attnum - 1)->attname));
}

Oid
shape_column_type(Relation rel, AttrNumber attnum)
{
	return TupleDescAttr(RelationGetDescr(rel), attnum - 1)->atttypid;
}

/* Rows, keys and machines given as jsonb are objects: a scalar or an array names nothing. */
static void
CheckJsonbObject(Jsonb *value, const char *argname, const char *example)
{
	if (!JB_ROOT_IS_OBJECT(value))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must be a jsonb object", argname),
				 errhint("Pass an object such as '%s'.", example)));
}

Jsonb *
shape_jsonb_arg(FunctionCallInfo fcinfo, int argno, const char *argname, const char *example)
{
	Jsonb	   *value;

	if (PG_ARGISNULL(argno))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("%s must not be null", argname)));
	value = PG_GETARG_JSONB_P(argno);
	CheckJsonbObject(value, argname, example);
	return value;
}

/* The columns an object's top-level keys name; each must exist. */
Bitmapset *
shape_jsonb_columns(Relation rel, Jsonb *object)
{
	JsonbIterator *it = JsonbIteratorInit(&object->root);
	JsonbValue	v;
	JsonbIteratorToken tok;
	Bitmapset  *columns = NULL;

	while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
	{
		if (tok == WJB_KEY)
		{
			char	   *name = pnstrdup(v.val.string.val, v.val.string.len);

			columns = bms_add_member(columns, shape_column(rel, name));
		}
	}
	return columns;
}

/* The key columns of a unique index, when they are plain columns and it is usable as an arbiter. */
static Bitmapset *
index_key_columns(Relation index)
{
	Form_pg_index form = index->rd_index;
	Bitmapset  *columns = NULL;

	if (!form->indisunique || !form->indimmediate || !form->indisvalid ||
		index->rd_rel->relam != BTREE_AM_OID ||
		!heap_attisnull(index->rd_indextuple, Anum_pg_index_indpred, NULL) ||
		!heap_attisnull(index->rd_indextuple, Anum_pg_index_indexprs, NULL))
		return NULL;
	for (int i = 0; i < form->indnkeyatts; i++)
		columns = bms_add_member(columns, form->indkey.values[i]);
	return columns;
}

static char *
column_list_text(Relation rel, Bitmapset *columns)
{
	StringInfoData buf;
	int			attnum = -1;

	initStringInfo(&buf);
	while ((attnum = bms_next_member(columns, attnum)) >= 0)
		appendStringInfo(&buf, "%s%s", buf.len > 0 ? ", " : "",
						 NameStr(TupleDescAttr(RelationGetDescr(rel), attnum - 1)->attname));
	return buf.data;
}

/*
 * The unique index whose key columns are exactly `columns` (any order), or the
 * primary key when `columns` is NULL.  Raises a clear error when there is none,
 * since without one neither ON CONFLICT nor "the row with this key" means anything.
 */
Oid
shape_unique_key(Relation rel, Bitmapset *columns)
{
	List	   *indexes;
	ListCell   *lc;
	Oid			found = InvalidOid;

	if (columns == NULL)
	{
		Oid			pk = compat_immediate_primary_key(rel);

		if (!OidIsValid(pk))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_COLUMN_REFERENCE),
					 errmsg("table \"%s\" has no primary key", RelationGetRelationName(rel)),
					 errhint("Name the columns of a unique constraint as the key.")));
		return pk;
	}

	indexes = RelationGetIndexList(rel);
	foreach(lc, indexes)
	{
		Relation	index = index_open(lfirst_oid(lc), AccessShareLock);
		Bitmapset  *keys = index_key_columns(index);

		if (keys != NULL && bms_equal(keys, columns))
			found = RelationGetRelid(index);
		index_close(index, AccessShareLock);
		if (OidIsValid(found))
			break;
	}
	list_free(indexes);

	if (!OidIsValid(found))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_COLUMN_REFERENCE),
				 errmsg("columns (%s) of \"%s\" are not a primary key or unique constraint",
						column_list_text(rel, columns), RelationGetRelationName(rel)),
				 errhint("A key must be exactly the columns of a primary key or of a non-partial unique constraint.")));
	return found;
}

Bitmapset *
shape_index_columns(Oid indexoid)
{
	Relation	index = index_open(indexoid, AccessShareLock);
	Bitmapset  *columns = NULL;

	for (int i = 0; i < index->rd_index->indnkeyatts; i++)
		columns = bms_add_member(columns, index->rd_index->indkey.values[i]);
	index_close(index, AccessShareLock);
	return columns;
}

/* A collation's schema-qualified, quoted name. */
static char *
shape_collation(Oid collid)
{
	HeapTuple	tuple = SearchSysCache1(COLLOID, ObjectIdGetDatum(collid));
	Form_pg_collation form;
	char	   *result;

	if (!HeapTupleIsValid(tuple))
		elog(ERROR, "cache lookup failed for collation %u", collid);
	form = (Form_pg_collation) GETSTRUCT(tuple);
	result = quote_qualified_identifier(get_namespace_name(form->collnamespace),
										NameStr(form->collname));
	ReleaseSysCache(tuple);
	return result;
}

/* OPERATOR(schema.name), the only way to name an operator independent of search_path. */
char *
shape_operator(Oid opno)
{
	HeapTuple	tuple = SearchSysCache1(OPEROID, ObjectIdGetDatum(opno));
	Form_pg_operator form;
	char	   *result;

	if (!HeapTupleIsValid(tuple))
		elog(ERROR, "cache lookup failed for operator %u", opno);
	form = (Form_pg_operator) GETSTRUCT(tuple);
	result = psprintf("OPERATOR(%s.%s)", quote_identifier(get_namespace_name(form->oprnamespace)),
					  NameStr(form->oprname));
	ReleaseSysCache(tuple);
	return result;
}

/* The ordering operator of a column's type, for version comparisons. */
char *
shape_less_than(Relation rel, AttrNumber attnum)
{
	Oid			type = shape_column_type(rel, attnum);
	TypeCacheEntry *entry = lookup_type_cache(type, TYPECACHE_LT_OPR);

	if (!OidIsValid(entry->lt_opr))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_FUNCTION),
				 errmsg("column \"%s\" of type %s has no ordering to compare versions with",
						NameStr(TupleDescAttr(RelationGetDescr(rel), attnum - 1)->attname),
						format_type_be(type))));
	return shape_operator(entry->lt_opr);
}

/*
 * "t.k1 OPERATOR(...) $3 AND ...": the key columns of an index compared with the
 * index's own equality operators, so that the comparison can use the index.
 * params maps an attribute number to the parameter holding its value.
 */
void
shape_append_key_match(StringInfo buf, Oid indexoid, const char *alias, const int *params)
{
	Relation	index = index_open(indexoid, AccessShareLock);
	Relation	heap = RelationIdGetRelation(index->rd_index->indrelid);

	for (int i = 0; i < index->rd_index->indnkeyatts; i++)
	{
		AttrNumber	attnum = index->rd_index->indkey.values[i];
		Oid			type = index->rd_opcintype[i];
		Oid			eq = get_opfamily_member(index->rd_opfamily[i], type, type,
											 BTEqualStrategyNumber);

		if (!OidIsValid(eq))
			elog(ERROR, "no equality operator in operator family %u", index->rd_opfamily[i]);
		appendStringInfo(buf, "%s%s.%s %s $%d", i > 0 ? " AND " : "", alias,
						 shape_column_name(heap, attnum), shape_operator(eq), params[attnum]);

		/*
		 * The row with this key is the one the index finds: compare with the
		 * index's collation where it is not the column's (a case-insensitive
		 * unique index on a column of another collation), as a direct read
		 * through the index does.
		 */
		if (OidIsValid(index->rd_indcollation[i]) &&
			index->rd_indcollation[i] != TupleDescAttr(RelationGetDescr(heap), attnum - 1)->attcollation)
			appendStringInfo(buf, " COLLATE %s", shape_collation(index->rd_indcollation[i]));
	}
	RelationClose(heap);
	index_close(index, AccessShareLock);
}

/*
 * The columns as parameters $first.. in attnum order: fills params (indexed by
 * attribute number) and the parameter types and values from a deformed row.
 * Returns the number of parameters added.
 */
int
shape_bind_columns(Relation rel, Bitmapset *columns, int first, int *params,
				   Oid *types, Datum *values, char *nulls,
				   const Datum *row, const bool *rownulls)
{
	int			attnum = -1;
	int			n = 0;

	while ((attnum = bms_next_member(columns, attnum)) >= 0)
	{
		int			p = first + n;

		params[attnum] = p;
		types[p - 1] = shape_column_type(rel, attnum);
		values[p - 1] = row[attnum - 1];
		nulls[p - 1] = rownulls[attnum - 1] ? 'n' : ' ';
		n++;
	}
	return n;
}

/* "$1, $2" for the columns in attnum order, by their parameters. */
void
shape_append_params(StringInfo buf, Bitmapset *columns, const int *params)
{
	int			attnum = -1;
	bool		first = true;

	while ((attnum = bms_next_member(columns, attnum)) >= 0)
	{
		appendStringInfo(buf, "%s$%d", first ? "" : ", ", params[attnum]);
		first = false;
	}
}

/* "p.c1, p.c2" for the columns in attnum order; prefix may be NULL. */
void
shape_append_columns(StringInfo buf, Relation rel, Bitmapset *columns, const char *prefix)
{
	int			attnum = -1;
	bool		first = true;

	while ((attnum = bms_next_member(columns, attnum)) >= 0)
	{
		appendStringInfo(buf, "%s%s%s%s", first ? "" : ", ",
						 prefix ? prefix : "", prefix ? "." : "",
						 shape_column_name(rel, attnum));
		first = false;
	}
}

/*
 * States are compared by their text form as values of the state column's type:
 * a state given as text (to_state, from_states, a machine's edges) is first read
 * by the type's input function with the column's typmod, then written by its
 * output function; a stored state is written by the output function.  So 'yes',
 * 'true' and 't' are one boolean state, 'A' is 'A  ' in a char(3) column, and the
 * direct read, the generated statements (format('%s', ...) is the output function)
 * and the guard trigger all agree.
 */
char *
shape_state_text(Relation rel, AttrNumber attnum, const char *state, Datum *value)
{
	Form_pg_attribute att = TupleDescAttr(RelationGetDescr(rel), attnum - 1);
	Oid			typinput;
	Oid			typioparam;
	Datum		datum;

	getTypeInputInfo(att->atttypid, &typinput, &typioparam);
	datum = OidInputFunctionCall(typinput, unconstify(char *, state), typioparam, att->atttypmod);
	if (value != NULL)
		*value = datum;
	return shape_value_text(rel, attnum, datum);
}

char *
shape_value_text(Relation rel, AttrNumber attnum, Datum value)
{
	Oid			typoutput;
	bool		varlena;

	getTypeOutputInfo(TupleDescAttr(RelationGetDescr(rel), attnum - 1)->atttypid,
					  &typoutput, &varlena);
	return OidOutputFunctionCall(typoutput, value);
}

/* A generated column takes no value from a caller: INSERT and UPDATE would refuse it. */
void
shape_check_assignable(Relation rel, Bitmapset *columns, bool insert)
{
	int			attnum = -1;

	while ((attnum = bms_next_member(columns, attnum)) >= 0)
	{
		Form_pg_attribute att = TupleDescAttr(RelationGetDescr(rel), attnum - 1);

		if (att->attgenerated)
			ereport(ERROR,
					(errcode(ERRCODE_GENERATED_ALWAYS),
					 insert ?
					 errmsg("cannot insert a non-DEFAULT value into column \"%s\"", NameStr(att->attname)) :
					 errmsg("column \"%s\" can only be updated to DEFAULT", NameStr(att->attname)),
					 errdetail("Column \"%s\" is a generated column.", NameStr(att->attname))));
		if (att->attidentity == ATTRIBUTE_IDENTITY_ALWAYS)
			ereport(ERROR,
					(errcode(ERRCODE_GENERATED_ALWAYS),
					 insert ?
					 errmsg("cannot insert a non-DEFAULT value into column \"%s\"", NameStr(att->attname)) :
					 errmsg("column \"%s\" can only be updated to DEFAULT", NameStr(att->attname)),
					 errdetail("Column \"%s\" is an identity column defined as GENERATED ALWAYS.",
							   NameStr(att->attname))));
	}
}

/* The generated columns of a table, which a whole row given by value leaves out. */
Bitmapset *
shape_generated_columns(Relation rel)
{
	TupleDesc	desc = RelationGetDescr(rel);
	Bitmapset  *columns = NULL;

	for (int i = 0; i < desc->natts; i++)
		if (TupleDescAttr(desc, i)->attgenerated && !TupleDescAttr(desc, i)->attisdropped)
			columns = bms_add_member(columns, i + 1);
	return columns;
}
