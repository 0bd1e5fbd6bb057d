/*
 * message_id.h
 *		Message ids from arguments, checked against the inbox's key type
 *		(message_id.c).
 */
#ifndef INBOX_MESSAGE_ID_H
#define INBOX_MESSAGE_ID_H

#include "inbox_info.h"

extern Datum message_id_from_arg(FunctionCallInfo fcinfo, int argno, Oid argtype,
								 const InboxInfo *inbox);
extern Datum message_id_from_element(Datum value, bool isnull, Oid argtype,
									 const InboxInfo *inbox, int position);
extern char *message_id_to_cstring(const InboxInfo *inbox, Datum message_id);

#endif							/* INBOX_MESSAGE_ID_H */
