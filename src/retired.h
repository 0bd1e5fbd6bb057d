/*
 * retired.h
 *		What a cache entry held, freed once the transaction ends (retired.c).
 */
#ifndef INBOX_RETIRED_H
#define INBOX_RETIRED_H

#include "executor/spi.h"

extern void retired_init(void);
extern void retired_add_plan(SPIPlanPtr plan);
extern void retired_add_context(MemoryContext cxt);

#endif							/* INBOX_RETIRED_H */
