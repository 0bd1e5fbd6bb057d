/*
 * retention.h
 *		Dedup windows: their bounds and cutoff, their index, and acting as
 *		a table's owner (retention.c).
 */
#ifndef INBOX_RETENTION_H
#define INBOX_RETENTION_H

#include "inbox_info.h"

/* Acting as a table's owner, as VACUUM does (restricted, search_path pinned). */
typedef struct AsOwner
{
	Oid			save_userid;
	int			save_sec_context;
	int			save_nestlevel;
} AsOwner;

extern Oid	retention_table_owner(Oid relid);
extern void retention_as_owner_begin(Oid relid, AsOwner *save);
extern void retention_as_owner_end(const AsOwner *save);

extern void retention_index_create(Oid relid);

extern TimestampTz retention_cutoff(const InboxInfo *inbox, TimestampTz now);
extern bool retention_within_bounds(const Interval *retention);

#endif							/* INBOX_RETENTION_H */
