/*
 * outbox.h
 *		Outboxes: events written in the producer's transaction and relayed to a
 *		broker afterwards (outbox.c, outbox_relay.c).
 */
#ifndef INBOX_OUTBOX_H
#define INBOX_OUTBOX_H

#include "postgres.h"

#include "executor/spi.h"
#include "fmgr.h"
#include "utils/relcache.h"

/* The CHECK constraint every outbox has; its presence says "this is an outbox". */
#define OUTBOX_MARKER "idempotent_inbox_outbox"

/* The classes of the outbox's advisory-class locks (see key_order.c). */
#define OUTBOX_TAKE_LOCKTAG_CLASS 0x4f42
#define OUTBOX_KEY_LOCKTAG_CLASS 0x4f4b

/* AMQP's routing key is a short string: at most 255 bytes. */
#define OUTBOX_MAX_TOPIC_BYTES 255

/* A key orders the events that share it and is compared at every take: bounded. */
#define OUTBOX_MAX_KEY_BYTES 1024

/* The statements of one outbox, each planned once per backend (outbox_plan). */
typedef enum OutboxStatement
{
	OUTBOX_EMIT,
	OUTBOX_PICK,
	OUTBOX_TAKE,
	OUTBOX_ACK_LEASE,
	OUTBOX_ACK_LEASE_LISTED,
	OUTBOX_ACK_EVENTS,
	OUTBOX_RELEASE_LEASE,
	OUTBOX_RELEASE_EVENTS,
	OUTBOX_PURGE,
	OUTBOX_NUM_STATEMENTS
} OutboxStatement;

extern Relation outbox_open(FunctionCallInfo fcinfo, AclMode rights, LOCKMODE lockmode);
extern SPIPlanPtr outbox_plan(Relation rel, OutboxStatement which);
extern Oid	outbox_registry_relation(FunctionCallInfo fcinfo);

#endif							/* INBOX_OUTBOX_H */
