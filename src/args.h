/*
 * args.h
 *		Checks of SQL-callable functions' arguments shared by several modules
 *		(args.c).
 */
#ifndef INBOX_ARGS_H
#define INBOX_ARGS_H

#include "fmgr.h"

extern text *bounded_text_arg(FunctionCallInfo fcinfo, int argno, const char *what,
							  int max_bytes, const char *null_hint);

#endif							/* INBOX_ARGS_H */
