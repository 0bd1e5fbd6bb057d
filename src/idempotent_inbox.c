/*
 * idempotent_inbox.c
 *		Module entry point.  _PG_init is a table of contents: one call per module
 *		that needs backend-level setup.
 */
#include "postgres.h"

#include "fmgr.h"
#include "utils/guc.h"

#include "adaptive.h"
#include "inbox.h"
#include "lease.h"
#include "purge_worker.h"
#include "registry.h"
#include "retired.h"
#include "row_values.h"
#include "shape_cache.h"
#include "statement_cache.h"
#include "stream_gaps.h"
#include "stats.h"
#include "untyped_params.h"

PG_MODULE_MAGIC;

extern void _PG_init(void);

void
_PG_init(void)
{
	retired_init();
	registry_init();
	statement_cache_init();
	row_values_init();
	shape_cache_init();
	adaptive_init();
	untyped_params_init();
	stream_gaps_init();
	lease_init();

	/* Shared memory and the background worker exist only when preloaded. */
	stats_init();
	purge_worker_init();

	MarkGUCPrefixReserved("idempotent_inbox");
}
