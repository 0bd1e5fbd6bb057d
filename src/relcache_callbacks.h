/*
 * relcache_callbacks.h
 *		One relcache invalidation callback for all of the library's caches.
 */
#ifndef INBOX_RELCACHE_CALLBACKS_H
#define INBOX_RELCACHE_CALLBACKS_H

#include "utils/inval.h"

extern void relcache_callback_register(RelcacheCallbackFunction func);

#endif							/* INBOX_RELCACHE_CALLBACKS_H */
