/*
 * spi_util.h
 *		SPI helpers (spi_util.c).
 */
#ifndef INBOX_SPI_UTIL_H
#define INBOX_SPI_UTIL_H

#include "executor/spi.h"

#include "compat.h"

extern void spi_connect(void);
extern SPIPlanPtr spi_prepare_kept(const char *sql, int nargs, Oid *argtypes);
extern SPIPlanPtr spi_prepare_kept_opts(const char *sql, int nargs, Oid *argtypes,
										int cursor_options);
extern void spi_free_plan(SPIPlanPtr *plan);
extern void spi_execute_expect(SPIPlanPtr plan, Datum *values, const char *nulls,
							   int expected);
extern void spi_exec_utility(const char *sql);
pg_noreturn extern void spi_report_error(int rc, const char *what);

#endif							/* INBOX_SPI_UTIL_H */
