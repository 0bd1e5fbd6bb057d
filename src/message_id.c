/*
 * message_id.c
 *		The rules a message id obeys, one named check per rule, and the conversion
 *		of an argument to the key type of its inbox.
 *
 * A text id may be given for any inbox, because untyped literals and driver
 * parameters arrive as text; it is converted with the key type's input function.
 * A uuid or bigint id must match the inbox's key type exactly.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"

#include "inbox_info.h"
#include "message_id.h"
#include "registry.h"

/* A NULL id cannot be deduplicated: refuse it rather than store or skip it. */
static void
CheckIdNotNull(bool isnull, int position)
{
	if (isnull)
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("message id must not be null"),
				 position > 0 ? errdetail("Element %d of the batch is null.", position) : 0));
}

/* An empty id is almost always a producer bug, and would collide across messages. */
static void
CheckIdNotEmpty(const text *id, int position)
{
	if (VARSIZE_ANY_EXHDR(id) == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("message id must not be empty"),
				 position > 0 ? errdetail("Element %d of the batch is empty.", position) : 0));
}

/* Ids are keys of a btree: bound them well below the index tuple limit. */
static void
CheckIdLength(const text *id, int position)
{
	int			len = VARSIZE_ANY_EXHDR(id);

	if (len > INBOX_MAX_ID_BYTES)
		ereport(ERROR,
				(errcode(ERRCODE_STRING_DATA_RIGHT_TRUNCATION),
				 errmsg("message id is too long"),
				 position > 0 ?
				 errdetail("Element %d of the batch is %d bytes; the limit is %d.",
						   position, len, INBOX_MAX_ID_BYTES) :
				 errdetail("The id is %d bytes; the limit is %d.", len, INBOX_MAX_ID_BYTES)));
}

/* The id's type must be the inbox's key type, or text to be converted. */
static void
CheckIdType(Oid argtype, const InboxInfo *inbox)
{
	if (argtype != inbox->keytype && argtype != TEXTOID)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("message id of type %s does not match inbox \"%s\"",
						format_type_be(argtype), get_rel_name(inbox->relid)),
				 errdetail("The inbox has keys of type %s.", format_type_be(inbox->keytype)),
				 inbox->keytype == TEXTOID ?
				 errhint("Pass the id as text.") :
				 errhint("Pass the id as %s or as text.", format_type_be(inbox->keytype))));
}

static Datum
convert_text_id(Datum value, const InboxInfo *inbox)
{
	Oid			typinput;
	Oid			typioparam;
	char	   *str;

	if (inbox->keytype == TEXTOID)
		return value;

	getTypeInputInfo(inbox->keytype, &typinput, &typioparam);
	str = TextDatumGetCString(value);
	return OidInputFunctionCall(typinput, str, typioparam, -1);
}

/*
 * One element of a batch, or a single id when position is 0.  Returns the id as a
 * Datum of the inbox's key type.
 */
Datum
message_id_from_element(Datum value, bool isnull, Oid argtype, const InboxInfo *inbox,
						int position)
{
	CheckIdNotNull(isnull, position);
	CheckIdType(argtype, inbox);

	if (argtype == TEXTOID)
	{
		const text *id = (const text *) DatumGetPointer(value);

		CheckIdNotEmpty(id, position);
		CheckIdLength(id, position);
		return convert_text_id(value, inbox);
	}
	return value;
}

Datum
message_id_from_arg(FunctionCallInfo fcinfo, int argno, Oid argtype, const InboxInfo *inbox)
{
	bool		isnull = PG_ARGISNULL(argno);
	Datum		value = isnull ? (Datum) 0 : PG_GETARG_DATUM(argno);

	/* An id alone, as the second argument, does not name a claim of a sharded inbox. */
	if (argno == 1)
		registry_check_shard_form(fcinfo, inbox, false);

	if (!isnull && argtype == TEXTOID)
		value = PointerGetDatum(PG_DETOAST_DATUM_PACKED(value));
	return message_id_from_element(value, isnull, argtype, inbox, 0);
}

/* An id as the user would write it, for messages. */
char *
message_id_to_cstring(const InboxInfo *inbox, Datum message_id)
{
	Oid			output;
	bool		isvarlena;

	getTypeOutputInfo(inbox->keytype, &output, &isvarlena);
	return OidOutputFunctionCall(output, message_id);
}
