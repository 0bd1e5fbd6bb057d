/*
 * purge_worker.h
 *		The background purge (purge_worker.c).
 */
#ifndef INBOX_PURGE_WORKER_H
#define INBOX_PURGE_WORKER_H

extern void purge_worker_init(void);

#endif							/* INBOX_PURGE_WORKER_H */
