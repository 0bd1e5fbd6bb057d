/*
 * fingerprint.c
 *		inbox.fingerprint(jsonb), and the check that one idempotency key is never
 *		reused with another payload.
 *
 * A client that retries sends the same key with the same request.  The same key
 * with a different request is a client bug (a reused counter, a key derived from
 * too little), and answering it with the first request's stored result would hide
 * the bug and lose the second request.  So a claim or lease given a fingerprint
 * compares it with the one stored with the key, and a difference is an error.
 */
#include "postgres.h"

#include "common/cryptohash.h"
#include "common/sha2.h"
#include "fmgr.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/numeric.h"

#include "inbox_info.h"
#include "fingerprint.h"
#include "message_id.h"
#include "stats.h"

/* Incremental SHA-256 that fails cleanly: the cryptohash API reports, not raises. */
typedef struct Sha256
{
	pg_cryptohash_ctx *ctx;
} Sha256;

static void
sha256_begin(Sha256 *d)
{
	d->ctx = pg_cryptohash_create(PG_SHA256);
	if (d->ctx == NULL || pg_cryptohash_init(d->ctx) < 0)
		elog(ERROR, "could not initialize a SHA-256 digest");
}

static void
sha256_add(Sha256 *d, const void *data, size_t len)
{
	if (pg_cryptohash_update(d->ctx, data, len) < 0)
		elog(ERROR, "could not update a SHA-256 digest");
}

static void
sha256_end(Sha256 *d, uint8 *out)
{
	if (pg_cryptohash_final(d->ctx, out, PG_SHA256_DIGEST_LENGTH) < 0)
		elog(ERROR, "could not finish a SHA-256 digest");
	pg_cryptohash_free(d->ctx);
}

/* A tag, then for variable-length data its length, so no two values run together. */
static void
digest_item(Sha256 *d, char tag, const char *data, uint32 len)
{
	sha256_add(d, &tag, 1);
	if (data != NULL)
	{
		uint32		be = pg_hton32(len);

		sha256_add(d, &be, sizeof(be));
		sha256_add(d, data, len);
	}
}

static void
digest_scalar(Sha256 *d, const JsonbValue *v)
{
	switch (v->type)
	{
		case jbvNull:
			digest_item(d, 'n', NULL, 0);
			break;
		case jbvBool:
			digest_item(d, v->val.boolean ? 't' : 'f', NULL, 0);
			break;
		case jbvString:
			digest_item(d, 's', v->val.string.val, v->val.string.len);
			break;
		case jbvNumeric:
			{
				/* 1.0 and 1 are equal jsonb: hash the value without trailing zeros. */
				char	   *text = numeric_normalize(v->val.numeric);

				digest_item(d, '#', text, strlen(text));
				pfree(text);
				break;
			}
		default:
			elog(ERROR, "unexpected jsonb scalar type %d", (int) v->type);
	}
}

/*
 * The digest of a jsonb value's canonical form.  jsonb already forgets
 * whitespace and duplicate keys and keeps object keys in one fixed order, so
 * walking it token by token gives the same bytes for equal documents.
 */
PG_FUNCTION_INFO_V1(inbox_fingerprint);
Datum
inbox_fingerprint(PG_FUNCTION_ARGS)
{
	Jsonb	   *payload = PG_GETARG_JSONB_P(0);
	JsonbIterator *it = JsonbIteratorInit(&payload->root);
	JsonbIteratorToken token;
	JsonbValue	v;
	Sha256 d;
	bytea	   *result = palloc(VARHDRSZ + PG_SHA256_DIGEST_LENGTH);

	sha256_begin(&d);
	while ((token = JsonbIteratorNext(&it, &v, false)) != WJB_DONE)
	{
		switch (token)
		{
			case WJB_BEGIN_ARRAY:
				digest_item(&d, v.val.array.rawScalar ? '=' : '[', NULL, 0);
				break;
			case WJB_END_ARRAY:
				digest_item(&d, ']', NULL, 0);
				break;
			case WJB_BEGIN_OBJECT:
				digest_item(&d, '{', NULL, 0);
				break;
			case WJB_END_OBJECT:
				digest_item(&d, '}', NULL, 0);
				break;
			case WJB_KEY:
				digest_item(&d, 'k', v.val.string.val, v.val.string.len);
				break;
			case WJB_VALUE:
			case WJB_ELEM:
				digest_scalar(&d, &v);
				break;
			default:
				elog(ERROR, "unexpected jsonb token %d", (int) token);
		}
	}
	sha256_end(&d, (uint8 *) VARDATA(result));
	SET_VARSIZE(result, VARHDRSZ + PG_SHA256_DIGEST_LENGTH);

	PG_RETURN_BYTEA_P(result);
}

/* The fingerprint argument, or NULL when none was given (no check is made). */
bytea *
fingerprint_arg(FunctionCallInfo fcinfo, int argno)
{
	if (PG_NARGS() <= argno || PG_ARGISNULL(argno))
		return NULL;
	return PG_GETARG_BYTEA_PP(argno);
}

static bool
fingerprints_equal(const bytea *a, const bytea *b)
{
	return VARSIZE_ANY_EXHDR(a) == VARSIZE_ANY_EXHDR(b) &&
		memcmp(VARDATA_ANY(a), VARDATA_ANY(b), VARSIZE_ANY_EXHDR(a)) == 0;
}

/*
 * Refuse a key whose stored claim was made with another fingerprint.  When either
 * side has none there is nothing to compare: fingerprints are opt-in per call.
 */
void
fingerprint_check(InboxInfo *inbox, Datum message_id, const ClaimRow *row,
				  const bytea *fingerprint)
{
	if (fingerprint == NULL || row->fingerprint == NULL ||
		fingerprints_equal(fingerprint, row->fingerprint))
		return;

	stats_count(inbox, COUNT_FINGERPRINT_CONFLICTS, 1);
	ereport(ERROR,
			(errcode(ERRCODE_IDEMPOTENCY_KEY_REUSED),
			 errmsg("idempotency key \"%s\" was reused with a different payload",
					message_id_to_cstring(inbox, message_id)),
			 errdetail("The key was first claimed with another request fingerprint."),
			 errhint("Use a new key for a new request; retry only with the same payload.")));
}
