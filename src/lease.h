/*
 * lease.h
 *		acquire, finish and release (lease.c).
 */
#ifndef INBOX_LEASE_H
#define INBOX_LEASE_H

extern void lease_init(void);

#endif							/* INBOX_LEASE_H */
