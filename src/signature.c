/*
 * signature.c
 *		What a call site of one of our SQL functions was declared with.
 *
 * One C function serves every overload of a SQL name (text, uuid and bigint keys;
 * the variadic shapes of claim_apply).  The declared types come from pg_proc rather
 * than from the call expression, so they are right however the function is called,
 * and are cached in fn_extra for the life of the call site.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_enum.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"

#include "inbox.h"
#include "signature.h"

/*
 * The extension was dropped while one of its functions was running (55000).
 * For every module that finds one of the extension's objects gone mid-call.
 */
void
signature_report_extension_dropped(void)
{
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("extension idempotent_inbox was dropped during the call"),
			 errdetail("A statement run by the call, or another session, dropped the extension's objects."),
			 errhint("Do not drop the extension while its functions run; create it again to use it.")));
}

const CallSignature *
signature_of_call(FunctionCallInfo fcinfo)
{
	CallSignature *sig = (CallSignature *) fcinfo->flinfo->fn_extra;
	HeapTuple	tuple;
	Form_pg_proc proc;
	Oid			keytype;

	if (sig != NULL)
		return sig;

	tuple = SearchSysCache1(PROCOID, ObjectIdGetDatum(fcinfo->flinfo->fn_oid));
	if (!HeapTupleIsValid(tuple))
		signature_report_extension_dropped();
	proc = (Form_pg_proc) GETSTRUCT(tuple);

	/*
	 * Every SQL function of ours that takes a message id takes it second, but
	 * the _sharded forms, which take the shard key ("any") second and the id third.
	 */
	sig = MemoryContextAlloc(fcinfo->flinfo->fn_mcxt, sizeof(CallSignature));
	sig->keyargno = (proc->pronargs >= 3 && proc->proargtypes.values[1] == ANYOID) ? 2 : 1;
	if (proc->pronargs <= sig->keyargno)
		elog(ERROR, "function %u has no message id argument", fcinfo->flinfo->fn_oid);
	keytype = proc->proargtypes.values[sig->keyargno];

	sig->keyargtype = keytype;
	sig->keytype = OidIsValid(get_element_type(keytype)) ? get_element_type(keytype) : keytype;
	sig->variadic_type = proc->provariadic;
	sig->rettype = proc->prorettype;
	ReleaseSysCache(tuple);

	fcinfo->flinfo->fn_extra = sig;
	return sig;
}

/*
 * The Datum of one label of one of our enums; labels are fixed by the install
 * script.  The enum is gone only if the extension was dropped after the call
 * began: by the statement of claim_apply, or by another session that committed
 * DROP EXTENSION meanwhile.
 */
Datum
signature_enum_label(Oid enumtype, const char *label)
{
	HeapTuple	tuple;
	Oid			result;

	if (!SearchSysCacheExists1(TYPEOID, ObjectIdGetDatum(enumtype)))
		signature_report_extension_dropped();
	tuple = SearchSysCache2(ENUMTYPOIDNAME, ObjectIdGetDatum(enumtype),
							CStringGetDatum(label));
	if (!HeapTupleIsValid(tuple))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("type %s has no label \"%s\"", format_type_be(enumtype), label),
				 errdetail("The labels of the extension's types were changed after it was installed."),
				 errhint("Reinstall the extension idempotent_inbox.")));
	result = ((Form_pg_enum) GETSTRUCT(tuple))->oid;
	ReleaseSysCache(tuple);

	return ObjectIdGetDatum(result);
}
