/*
 * untyped_params.h
 *		Types for untyped driver parameters in "any" arguments (untyped_params.c).
 */
#ifndef INBOX_UNTYPED_PARAMS_H
#define INBOX_UNTYPED_PARAMS_H

extern void untyped_params_init(void);

#endif							/* INBOX_UNTYPED_PARAMS_H */
