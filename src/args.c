/*
 * args.c
 *		Checks of SQL-callable functions' arguments shared by several modules.
 *
 * Each names the argument in its errors the way the function's documentation
 * does, so that the caller can tell which one was wrong without reading code.
 */
#include "postgres.h"

#include "fmgr.h"

#include "args.h"
#include "compat.h"

/*
 * A text argument that is not empty and at most max_bytes long: a topic, an
 * event's key, an ordering key.  With null_hint, NULL is allowed (the argument is
 * optional) and returned as NULL, and an empty value is refused with the hint;
 * without it, NULL is refused.
 */
text *
bounded_text_arg(FunctionCallInfo fcinfo, int argno, const char *what, int max_bytes,
				 const char *null_hint)
{
	text	   *value;
	int			len;

	if (PG_ARGISNULL(argno))
	{
		if (null_hint != NULL)
			return NULL;
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("%s must not be null", what)));
	}
	value = PG_GETARG_TEXT_PP(argno);
	len = VARSIZE_ANY_EXHDR(value);
	if (len == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must not be empty", what),
				 null_hint ? errhint("%s", null_hint) : 0));
	if (len > max_bytes)
		ereport(ERROR,
				(errcode(ERRCODE_STRING_DATA_RIGHT_TRUNCATION),
				 errmsg("%s is too long", what),
				 errdetail("The %s is %d bytes; the limit is %d.", what, len, max_bytes)));
	return value;
}
