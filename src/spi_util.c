/*
 * spi_util.c
 *		Prepare and keep SPI plans, and run them asserting what they must return.
 *
 * Callers own SPI_connect/SPI_finish.  A failure here is our bug, not the user's,
 * so it is reported with elog rather than a user-facing SQLSTATE; errors raised by
 * the executor itself (constraint violations, lock timeouts) pass through untouched.
 */
#include "postgres.h"

#include "executor/spi.h"

#include "inbox.h"

void
spi_connect(void)
{
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
}

SPIPlanPtr
spi_prepare_kept(const char *sql, int nargs, Oid *argtypes)
{
	SPIPlanPtr	plan = SPI_prepare(sql, nargs, argtypes);

	if (plan == NULL)
		elog(ERROR, "SPI_prepare failed for \"%s\": %s",
			 sql, SPI_result_code_string(SPI_result));
	if (SPI_keepplan(plan) != 0)
		elog(ERROR, "SPI_keepplan failed");
	return plan;
}

void
spi_free_plan(SPIPlanPtr *plan)
{
	if (*plan != NULL)
		SPI_freeplan(*plan);
	*plan = NULL;
}

void
spi_execute_expect(SPIPlanPtr plan, Datum *values, const char *nulls, int expected)
{
	int			rc = SPI_execute_plan(plan, values, nulls, false, 0);

	if (rc != expected)
		elog(ERROR, "SPI_execute_plan returned %s, expected %s",
			 SPI_result_code_string(rc), SPI_result_code_string(expected));
}
