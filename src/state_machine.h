/*
 * state_machine.h
 *		State machines declared by trigger (state_machine.c).
 */
#ifndef INBOX_STATE_MACHINE_H
#define INBOX_STATE_MACHINE_H

#include "utils/array.h"
#include "utils/relcache.h"

extern ArrayType *state_machine_sources(Relation rel, const char *column, const char *to_state,
										Oid nspid);

#endif							/* INBOX_STATE_MACHINE_H */
