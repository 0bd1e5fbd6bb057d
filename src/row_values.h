/*
 * row_values.h
 *		A row's values from a jsonb object (row_values.c).
 */
#ifndef INBOX_ROW_VALUES_H
#define INBOX_ROW_VALUES_H

#include "utils/jsonb.h"
#include "utils/relcache.h"

#include "inbox.h"

extern void row_values_init(void);
extern void row_values_from_jsonb(Relation rel, Jsonb *object, Datum *values, bool *nulls);

#endif							/* INBOX_ROW_VALUES_H */
