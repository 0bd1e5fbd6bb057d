/*
 * row_values.c
 *		A jsonb object as the values of a table's columns, converted exactly as
 *		jsonb_populate_record(NULL::table, object) converts them: by the column
 *		types' own input rules, typmods applied, nested arrays and objects into
 *		array and composite columns.
 *
 * Converting here rather than inside the generated statements lets those
 * statements take plain typed parameters, so that they plan as simple index scans
 * and inserts instead of function scans joined to the table.  jsonb_populate_record
 * is called through fmgr with a call expression that tells it the row type; its
 * per-call-site cache lives in a FmgrInfo kept per table, dropped when the table
 * or a composite type its columns hold changes.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "nodes/makefuncs.h"
#include "utils/fmgroids.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/typcache.h"

#include "inbox.h"
#include "relcache_callbacks.h"
#include "retired.h"
#include "row_values.h"

/*
 * A converter lives in its own context, apart from its hash entry: an
 * invalidation can arrive in the middle of a conversion (a catalog lock taken by
 * jsonb_populate_record, a domain check that runs DDL), and the converter must
 * outlive that conversion.  So a forgotten converter is retired (retired.c), not
 * freed: its context goes when the transaction ends, when no conversion can be
 * running, the protocol every cache of the extension follows.
 */
typedef struct RowConverter
{
	MemoryContext cxt;			/* holds this, the FmgrInfo, its expression and cache */
	FmgrInfo	populate;
	List	   *composites;		/* relids of the composite types its cache describes */
} RowConverter;

typedef struct ConverterEntry
{
	Oid			relid;			/* hash key */
	RowConverter *converter;
} ConverterEntry;

static HTAB *Converters = NULL;

static void
forget_converter(Datum arg, Oid relid)
{
	HASH_SEQ_STATUS status;
	ConverterEntry *entry;

	if (Converters == NULL)
		return;
	hash_seq_init(&status, Converters);
	while ((entry = hash_seq_search(&status)) != NULL)
	{
		if (OidIsValid(relid) && entry->relid != relid &&
			!list_member_oid(entry->converter->composites, relid))
			continue;
		retired_add_context(entry->converter->cxt);
		hash_search(Converters, &entry->relid, HASH_REMOVE, NULL);
	}
}

void
row_values_init(void)
{
	HASHCTL		ctl;

	ctl.keysize = sizeof(Oid);
	ctl.entrysize = sizeof(ConverterEntry);
	ctl.hcxt = CacheMemoryContext;
	Converters = hash_create("idempotent_inbox row converters", 16, &ctl,
							 HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	relcache_callback_register(forget_converter);
}

/*
 * Add to *relids the relations of the composite types a value of this type
 * holds, at any depth (through domains, arrays and ranges).  jsonb_populate_record
 * caches how to build each of them; ALTER TYPE ... ADD ATTRIBUTE changes one
 * without touching the table, and tells only the composite type's relation.
 */
static void
add_composites(Oid type, List **relids)
{
	Oid			relid;
	TupleDesc	desc;

	type = getBaseType(type);
	if (OidIsValid(get_element_type(type)))
	{
		add_composites(get_element_type(type), relids);
		return;
	}
	switch (get_typtype(type))
	{
		case TYPTYPE_RANGE:
			add_composites(get_range_subtype(type), relids);
			return;
		case TYPTYPE_MULTIRANGE:
			add_composites(get_multirange_range(type), relids);
			return;
		case TYPTYPE_COMPOSITE:
			break;
		default:
			return;
	}
	relid = get_typ_typrelid(type);
	if (!OidIsValid(relid) || list_member_oid(*relids, relid))
		return;
	*relids = lappend_oid(*relids, relid);
	desc = lookup_rowtype_tupdesc(type, -1);
	for (int i = 0; i < desc->natts; i++)
		if (!TupleDescAttr(desc, i)->attisdropped)
			add_composites(TupleDescAttr(desc, i)->atttypid, relids);
	ReleaseTupleDesc(desc);
}

static RowConverter *
converter_for(Relation rel)
{
	Oid			relid = RelationGetRelid(rel);
	Oid			rowtype = rel->rd_rel->reltype;
	ConverterEntry *entry;
	RowConverter *converter;
	MemoryContext cxt;
	MemoryContext oldcxt;
	List	   *args;

	entry = hash_search(Converters, &relid, HASH_FIND, NULL);
	if (entry != NULL)
		return entry->converter;

	cxt = AllocSetContextCreate(CacheMemoryContext, "idempotent_inbox row converter",
								ALLOCSET_SMALL_SIZES);
	oldcxt = MemoryContextSwitchTo(cxt);
	converter = palloc0(sizeof(RowConverter));
	converter->cxt = cxt;
	fmgr_info_cxt(F_JSONB_POPULATE_RECORD, &converter->populate, cxt);
	for (int i = 0; i < RelationGetDescr(rel)->natts; i++)
		if (!TupleDescAttr(RelationGetDescr(rel), i)->attisdropped)
			add_composites(TupleDescAttr(RelationGetDescr(rel), i)->atttypid,
						   &converter->composites);
	args = list_make2(makeNullConst(rowtype, -1, InvalidOid),
					  makeNullConst(JSONBOID, -1, InvalidOid));
	fmgr_info_set_expr((Node *) makeFuncExpr(F_JSONB_POPULATE_RECORD, rowtype, args,
											 InvalidOid, InvalidOid, COERCE_EXPLICIT_CALL),
					   &converter->populate);
	MemoryContextSwitchTo(oldcxt);

	entry = hash_search(Converters, &relid, HASH_ENTER, NULL);
	entry->converter = converter;
	return converter;
}

/*
 * Fill values and nulls, indexed by attribute number - 1, with the object's
 * values for every column of rel (NULL for columns the object does not name).
 */
void
row_values_from_jsonb(Relation rel, Jsonb *object, Datum *values, bool *nulls)
{
	RowConverter *converter = converter_for(rel);
	LOCAL_FCINFO(fcinfo, 2);
	Datum		record;
	HeapTupleData tuple;

	InitFunctionCallInfoData(*fcinfo, &converter->populate, 2, InvalidOid, NULL, NULL);
	fcinfo->args[0].value = (Datum) 0;
	fcinfo->args[0].isnull = true;
	fcinfo->args[1].value = JsonbPGetDatum(object);
	fcinfo->args[1].isnull = false;
	record = FunctionCallInvoke(fcinfo);
	if (fcinfo->isnull)
		elog(ERROR, "jsonb_populate_record returned NULL");

	tuple.t_len = HeapTupleHeaderGetDatumLength(DatumGetHeapTupleHeader(record));
	ItemPointerSetInvalid(&tuple.t_self);
	tuple.t_tableOid = InvalidOid;
	tuple.t_data = DatumGetHeapTupleHeader(record);
	heap_deform_tuple(&tuple, RelationGetDescr(rel), values, nulls);
}
