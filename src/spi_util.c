/*
 * spi_util.c
 *		Prepare and keep SPI plans, and run them asserting what they must return.
 *
 * Callers own SPI_connect/SPI_finish.  Errors raised by the executor itself
 * (constraint violations, lock timeouts) pass through untouched; SPI's own
 * negative result codes become errors with a SQLSTATE of their own each
 * (spi_report_error), never XX000.
 */
#include "postgres.h"

#include "executor/spi.h"

#include "inbox.h"
#include "spi_util.h"

/*
 * Report a negative SPI result code as an error.  what names the statement, for
 * the message: "the statement of claim_apply", "registry lookup".
 */
void
spi_report_error(int rc, const char *what)
{
	int			sqlstate;
	const char *hint = NULL;

	switch (rc)
	{
		case SPI_ERROR_COPY:
			sqlstate = ERRCODE_FEATURE_NOT_SUPPORTED;
			hint = "COPY to or from the client cannot run inside a function; use INSERT.";
			break;
		case SPI_ERROR_TRANSACTION:
			sqlstate = ERRCODE_INVALID_TRANSACTION_TERMINATION;
			hint = "The statement runs inside the caller's transaction and cannot end it.";
			break;
		case SPI_ERROR_OPUNKNOWN:
			sqlstate = ERRCODE_FEATURE_NOT_SUPPORTED;
			break;
		case SPI_ERROR_ARGUMENT:
			sqlstate = ERRCODE_INVALID_PARAMETER_VALUE;
			break;
		case SPI_ERROR_PARAM:
			sqlstate = ERRCODE_UNDEFINED_PARAMETER;
			break;
		case SPI_ERROR_CURSOR:
			sqlstate = ERRCODE_INVALID_CURSOR_NAME;
			break;
		case SPI_ERROR_NOATTRIBUTE:
			sqlstate = ERRCODE_UNDEFINED_COLUMN;
			break;
		case SPI_ERROR_NOOUTFUNC:
			sqlstate = ERRCODE_UNDEFINED_FUNCTION;
			break;
		case SPI_ERROR_TYPUNKNOWN:
			sqlstate = ERRCODE_UNDEFINED_OBJECT;
			break;
		case SPI_ERROR_REL_DUPLICATE:
			sqlstate = ERRCODE_DUPLICATE_OBJECT;
			break;
		case SPI_ERROR_REL_NOT_FOUND:
			sqlstate = ERRCODE_UNDEFINED_TABLE;
			break;
		default:
			/* SPI_ERROR_CONNECT, SPI_ERROR_UNCONNECTED: SPI is not in the state we need. */
			sqlstate = ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE;
			break;
	}
	ereport(ERROR,
			(errcode(sqlstate),
			 errmsg("%s could not run: %s", what, SPI_result_code_string(rc)),
			 hint ? errhint("%s", hint) : 0));
}

void
spi_connect(void)
{
	int			rc = SPI_connect();

	if (rc != SPI_OK_CONNECT)
		spi_report_error(rc, "SPI_connect");
}

SPIPlanPtr
spi_prepare_kept(const char *sql, int nargs, Oid *argtypes)
{
	return spi_prepare_kept_opts(sql, nargs, argtypes, 0);
}

/* spi_prepare_kept with cursor options, such as CURSOR_OPT_GENERIC_PLAN. */
SPIPlanPtr
spi_prepare_kept_opts(const char *sql, int nargs, Oid *argtypes, int cursor_options)
{
	SPIPlanPtr	plan = SPI_prepare_cursor(sql, nargs, argtypes, cursor_options);
	int			rc;

	if (plan == NULL)
		spi_report_error(SPI_result, "preparing a statement");
	rc = SPI_keepplan(plan);
	if (rc != 0)
	{
		SPI_freeplan(plan);
		spi_report_error(rc, "keeping a prepared statement");
	}
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

	if (rc < 0)
		spi_report_error(rc, "a statement of idempotent_inbox");
	if (rc != expected)
		elog(ERROR, "SPI_execute_plan returned %s, expected %s",
			 SPI_result_code_string(rc), SPI_result_code_string(expected));
}

/* Run a utility statement built by the caller (DDL with quoted names); SPI is connected. */
void
spi_exec_utility(const char *sql)
{
	int			rc = SPI_execute(sql, false, 0);

	if (rc != SPI_OK_UTILITY)
		elog(ERROR, "SPI_execute returned %s for a utility statement", SPI_result_code_string(rc));
}
