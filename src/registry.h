/*
 * registry.h
 *		Which tables are inboxes: the per-backend lookup and the rights
 *		checks made with it (registry.c).
 */
#ifndef INBOX_REGISTRY_H
#define INBOX_REGISTRY_H

#include "inbox_info.h"

extern void registry_init(void);
extern InboxInfo *registry_lookup(FunctionCallInfo fcinfo, int argno, LOCKMODE lockmode,
								  AclMode rights);
extern InboxInfo *registry_lookup_relid(FunctionCallInfo fcinfo, Oid relid, LOCKMODE lockmode,
										AclMode rights);
extern InboxInfo *registry_lookup_if_intact(FunctionCallInfo fcinfo, int argno, LOCKMODE lockmode);
extern void registry_check_window_rights(const InboxInfo *inbox);
extern void registry_check_stored_reads(FunctionCallInfo fcinfo, const InboxInfo *inbox);
extern void registry_check_shard_form(FunctionCallInfo fcinfo, const InboxInfo *inbox,
									  bool sharded_call);
extern Oid	registry_extension_namespace(FunctionCallInfo fcinfo);
extern Oid	registry_extension_relation(FunctionCallInfo fcinfo, const char *relname);

#endif							/* INBOX_REGISTRY_H */
