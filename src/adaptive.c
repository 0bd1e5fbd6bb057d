/*
 * adaptive.c
 *		idempotent_inbox.force_path: a developer setting, for tests, that forces
 *		the order of steps the adaptive paths otherwise pick from moving averages
 *		(adaptive.h has the table).  Answers never depend on it.
 */
#include "postgres.h"

#include "utils/guc.h"

#include "adaptive.h"

int			adaptive_force_path = ADAPTIVE_AUTO;

static const struct config_enum_entry force_path_options[] = {
	{"auto", ADAPTIVE_AUTO, false},
	{"probe", ADAPTIVE_PROBE, false},
	{"insert", ADAPTIVE_INSERT, false},
	{"update", ADAPTIVE_UPDATE, false},
	{NULL, 0, false}
};

void
adaptive_init(void)
{
	DefineCustomEnumVariable("idempotent_inbox.force_path",
							 "Forces the order of steps of claim, upsert and transition (for testing).",
							 "auto picks each order from recent calls; probe reads first, "
							 "insert and update write first.  Answers are the same under every value.",
							 &adaptive_force_path,
							 ADAPTIVE_AUTO,
							 force_path_options,
							 PGC_USERSET, GUC_NOT_IN_SAMPLE,
							 NULL, NULL, NULL);
}
