/*
 * signature.h
 *		What a call site was declared with, and errors about our own SQL
 *		objects (signature.c).
 */
#ifndef INBOX_SIGNATURE_H
#define INBOX_SIGNATURE_H

#include "fmgr.h"

#include "compat.h"

/* What a call site of one of our SQL functions was declared with. */
typedef struct CallSignature
{
	int			keyargno;		/* the message id argument: 1, or 2 after a shard key */
	Oid			keyargtype;		/* declared type of the message id argument */
	Oid			keytype;		/* the same, or its element type for arrays */
	Oid			variadic_type;	/* InvalidOid, ANYOID or TEXTOID */
	Oid			rettype;		/* declared result type (an enum for some) */
} CallSignature;

extern const CallSignature *signature_of_call(FunctionCallInfo fcinfo);
extern Datum signature_enum_label(Oid enumtype, const char *label);
pg_noreturn extern void signature_report_extension_dropped(void);

#endif							/* INBOX_SIGNATURE_H */
