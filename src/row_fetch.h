/*
 * row_fetch.h
 *		Fetching a row by a unique key without the executor (row_fetch.c).
 */
#ifndef INBOX_ROW_FETCH_H
#define INBOX_ROW_FETCH_H

#include "inbox.h"

extern bool row_fetch_allowed(Relation rel);
extern bool row_fetch(Relation rel, Oid keyindex, const Datum *row, const bool *rownulls,
					  Datum *stored, bool *storednulls);

#endif							/* INBOX_ROW_FETCH_H */
