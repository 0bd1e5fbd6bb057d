/*
 * purge_worker.c
 *		The background purge: a launcher that, every purge_interval seconds, visits
 *		each database in turn with a short-lived worker that purges the expired
 *		claims of every inbox with a retention.
 *
 * Only a process connected to a database can see whether the extension is
 * installed there, so the launcher, which connects to none and reads only the
 * shared catalog pg_database, starts one worker per database that accepts
 * connections and is neither a template nor invalid, one at a time, and waits
 * for it.  A worker in a database without the extension leaves after one index
 * probe of pg_extension.  Each batch is a transaction of its own calling
 * inbox.purge(), so the worker deletes exactly what a user calling purge would,
 * and holds its row locks only for one batch.
 *
 * The worker is connected as the bootstrap superuser, but it runs nothing of an
 * inbox owner's as such: inbox.purge() switches to the table's owner, restricted
 * and with search_path pinned, for everything it does to the table (retention.c).
 * What the worker itself runs, as superuser, is two catalog reads and a query on
 * the extension's registry, with search_path pinned to pg_catalog, pg_temp.
 *
 * Manners.  A visit is short and yields:
 *	- every transaction is bounded by WORKER_STATEMENT_TIMEOUT_MS and
 *	  WORKER_LOCK_TIMEOUT, and the whole visit by VISIT_BUDGET_MS (the next pass
 *	  goes on where this one stopped); user code that swallows its statement's
 *	  cancel ends the worker at VISIT_HARD_LIMIT_MS;
 *	- DROP DATABASE (and CREATE DATABASE ... TEMPLATE, ALTER DATABASE RENAME or
 *	  SET TABLESPACE) locks the database object and then waits a few seconds for
 *	  the other sessions to leave, but PostgreSQL signals only autovacuum, not
 *	  background workers.  So each of our transactions takes the lock a session
 *	  takes when it connects (RowExclusiveLock on the database) without waiting:
 *	  when such a command holds or awaits its lock, the worker leaves at once, and
 *	  when it comes while a batch runs, it waits at most for that batch;
 *	- no worker runs during a binary upgrade (pg_upgrade);
 *	- SIGTERM ends either process at its next interrupt check, SIGHUP reloads
 *	  the configuration (purge_interval = 0 also ends a visit under way).
 */
#include "postgres.h"

#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_database.h"
#include "catalog/pg_type.h"
#include "commands/extension.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/lock.h"
#include "storage/proc.h"
#include "tcop/tcopprot.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timeout.h"
#include "utils/timestamp.h"

#include "compat.h"
#include "inbox.h"
#include "purge_worker.h"

PGDLLEXPORT void purge_launcher_main(Datum arg);
PGDLLEXPORT void purge_database_main(Datum arg);

static int	purge_interval = 60;	/* seconds; 0 turns the worker off */
static int	purge_batch = 10000;	/* rows per transaction */

/* While the purge is off the launcher still wakes now and then, to notice a reload. */
#define IDLE_WAKEUP_MS (60 * 1000L)

/* Bounds of one visit: each transaction, each lock wait, the whole visit. */
#define WORKER_STATEMENT_TIMEOUT_MS (30 * 1000)
#define WORKER_LOCK_TIMEOUT "1s"
#define VISIT_BUDGET_MS (60 * 1000L)

/* Set in a worker when the visit should end before the next transaction. */
static TimestampTz visit_deadline = 0;

/*
 * The last moment a visit can last to, its budget and one statement timeout
 * past it, for an inbox owner's trigger that catches its cancel (a PL/pgSQL
 * EXCEPTION WHEN query_canceled in a loop): then the worker ends as SIGTERM
 * would end it, which no exception block catches, and the launcher goes on to
 * the next database.  Without it one owner held the worker, the purge of every
 * other database and a DROP DATABASE of their own for as long as they liked.
 */
#define VISIT_HARD_LIMIT_MS (VISIT_BUDGET_MS + WORKER_STATEMENT_TIMEOUT_MS + 5 * 1000L)
static volatile sig_atomic_t visit_overran = false;

static void
visit_hard_limit_reached(void)
{
	visit_overran = true;
	ProcDiePending = true;
	InterruptPending = true;
	SetLatch(MyLatch);
}

static void
report_overrun(int code, Datum arg)
{
	if (visit_overran)
		ereport(LOG,
				(errmsg("idempotent_inbox purge worker ended its visit to database %u after %ld s",
						MyDatabaseId, VISIT_HARD_LIMIT_MS / 1000),
				 errdetail("Code run by the purge, such as an inbox owner's trigger, did not end when its statement timed out.")));
}

void
purge_worker_init(void)
{
	BackgroundWorker worker;

	DefineCustomIntVariable("idempotent_inbox.purge_interval",
							"Seconds between background purges of expired claims.",
							"0 turns the background purge off.",
							&purge_interval, 60, 0, INT_MAX / 1000,
							PGC_SIGHUP, GUC_UNIT_S, NULL, NULL, NULL);
	DefineCustomIntVariable("idempotent_inbox.purge_batch",
							"Expired claims the background purge deletes per transaction.",
							NULL,
							&purge_batch, 10000, 1, INT_MAX,
							PGC_SIGHUP, 0, NULL, NULL, NULL);

	/* pg_upgrade's server must run nothing but what pg_upgrade asks of it. */
	if (!process_shared_preload_libraries_in_progress || IsBinaryUpgrade)
		return;

	memset(&worker, 0, sizeof(worker));
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	worker.bgw_start_time = BgWorkerStart_RecoveryFinished;
	worker.bgw_restart_time = 10;
	snprintf(worker.bgw_library_name, BGW_MAXLEN, "idempotent_inbox");
	snprintf(worker.bgw_function_name, BGW_MAXLEN, "purge_launcher_main");
	snprintf(worker.bgw_name, BGW_MAXLEN, "idempotent_inbox launcher");
	snprintf(worker.bgw_type, BGW_MAXLEN, "idempotent_inbox launcher");
	RegisterBackgroundWorker(&worker);
}

/* The databases a worker may connect to, read from the shared catalog. */
static List *
databases_to_visit(void)
{
	List	   *dbids = NIL;
	Relation	rel;
	TableScanDesc scan;
	HeapTuple	tuple;
	MemoryContext outer = CurrentMemoryContext;

	StartTransactionCommand();
	rel = table_open(DatabaseRelationId, AccessShareLock);
	scan = table_beginscan_catalog(rel, 0, NULL);
	while ((tuple = heap_getnext(scan, ForwardScanDirection)) != NULL)
	{
		Form_pg_database db = (Form_pg_database) GETSTRUCT(tuple);
		MemoryContext old;

		if (!db->datallowconn || db->datistemplate || compat_database_is_invalid(db))
			continue;
		old = MemoryContextSwitchTo(outer);
		dbids = lappend_oid(dbids, db->oid);
		MemoryContextSwitchTo(old);
	}
	table_endscan(scan);
	table_close(rel, AccessShareLock);
	CommitTransactionCommand();

	return dbids;
}

static void
visit_database(Oid dbid)
{
	BackgroundWorker worker;
	BackgroundWorkerHandle *handle;
	pid_t		pid;

	memset(&worker, 0, sizeof(worker));
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	worker.bgw_start_time = BgWorkerStart_RecoveryFinished;
	worker.bgw_restart_time = BGW_NEVER_RESTART;
	worker.bgw_main_arg = ObjectIdGetDatum(dbid);
	worker.bgw_notify_pid = MyProcPid;
	snprintf(worker.bgw_library_name, BGW_MAXLEN, "idempotent_inbox");
	snprintf(worker.bgw_function_name, BGW_MAXLEN, "purge_database_main");
	snprintf(worker.bgw_name, BGW_MAXLEN, "idempotent_inbox purge of database %u", dbid);
	snprintf(worker.bgw_type, BGW_MAXLEN, "idempotent_inbox purge");

	if (!RegisterDynamicBackgroundWorker(&worker, &handle))
	{
		ereport(LOG,
				(errmsg("idempotent_inbox could not start a purge worker"),
				 errhint("Consider raising max_worker_processes.")));
		return;
	}
	if (WaitForBackgroundWorkerStartup(handle, &pid) == BGWH_STARTED)
		WaitForBackgroundWorkerShutdown(handle);
	pfree(handle);
}

void
purge_launcher_main(Datum arg)
{
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();
	if (IsBinaryUpgrade)
		proc_exit(0);			/* exit code 0: not restarted */
	BackgroundWorkerInitializeConnection(NULL, NULL, 0);

	for (;;)
	{
		long		timeout = IDLE_WAKEUP_MS;

		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}

		if (purge_interval > 0)
		{
			List	   *dbids = databases_to_visit();
			ListCell   *lc;

			foreach(lc, dbids)
			{
				CHECK_FOR_INTERRUPTS();
				visit_database(lfirst_oid(lc));
			}
			list_free(dbids);
			timeout = purge_interval * 1000L;
		}

		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 timeout, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
	}
}

/*
 * Leave the database, between transactions, when the visit is over: its time is
 * up, the purge was turned off by a reload, or another session needs the
 * database to itself (see the head of the file).
 */
static void
leave(const char *why)
{
	elog(DEBUG1, "idempotent_inbox purge worker leaving database %u: %s", MyDatabaseId, why);
	proc_exit(0);
}

static void
check_visit(void)
{
	CHECK_FOR_INTERRUPTS();
	if (ConfigReloadPending)
	{
		ConfigReloadPending = false;
		ProcessConfigFile(PGC_SIGHUP);
	}
	if (purge_interval == 0)
		leave("the purge was turned off");
	if (GetCurrentTimestamp() >= visit_deadline)
		leave("the visit took its time budget");
}

/*
 * The lock a session takes on its database as it connects, taken without
 * waiting: not granted when DROP DATABASE or the like holds or awaits the
 * database's lock.  Held until the transaction ends, so such a command, arriving
 * later, waits for this transaction rather than counting us as a user.
 */
static bool
database_lock_available(void)
{
	LOCKTAG		tag;

	SET_LOCKTAG_OBJECT(tag, InvalidOid, DatabaseRelationId, MyDatabaseId, 0);
	return LockAcquire(&tag, RowExclusiveLock, false, true) != LOCKACQUIRE_NOT_AVAIL;
}

/*
 * Each step of a worker is a transaction of its own, with a snapshot and SPI,
 * bounded by the worker's statement timeout (SPI does not arm it: only the
 * protocol loop of an ordinary backend does).
 */
static void
step_begin(void)
{
	check_visit();
	StartTransactionCommand();
	if (!database_lock_available())
	{
		AbortCurrentTransaction();
		leave("another session needs the database to itself");
	}
	enable_timeout_after(STATEMENT_TIMEOUT, WORKER_STATEMENT_TIMEOUT_MS);
	PushActiveSnapshot(GetTransactionSnapshot());
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
}

static void
step_end(void)
{
	SPI_finish();
	PopActiveSnapshot();
	CommitTransactionCommand();
	disable_timeout(STATEMENT_TIMEOUT, false);
}

/* Is the extension installed in this database?  One index probe of pg_extension. */
static bool
extension_installed(void)
{
	bool		installed;

	StartTransactionCommand();
	installed = OidIsValid(get_extension_oid("idempotent_inbox", true));
	CommitTransactionCommand();
	return installed;
}

/* The tables of one of the extension's registries that have a retention, in OID order. */
static List *
registry_with_retention(const char *schema, const char *registry, MemoryContext outer)
{
	List	   *relids = NIL;

	if (SPI_execute(psprintf("SELECT relid::pg_catalog.oid FROM %s.%s "
							 "WHERE retention IS NOT NULL ORDER BY 1", schema, registry),
					true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not list the tables of %s to purge", registry);
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		bool		isnull;
		Oid			relid = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[i],
														   SPI_tuptable->tupdesc, 1, &isnull));
		MemoryContext old = MemoryContextSwitchTo(outer);

		relids = lappend_oid(relids, relid);
		MemoryContextSwitchTo(old);
	}
	return relids;
}

/*
 * The extension's schema in this database, its inboxes that have a retention,
 * and in *outboxes its outboxes that have one; none when the extension is no
 * longer installed here.
 */
static List *
inboxes_with_retention(char **schema, List **outboxes)
{
	List	   *relids = NIL;
	MemoryContext outer = CurrentMemoryContext;

	step_begin();
	/*
	 * The schema of the extension's registry table: since 0.2 the extension is
	 * recorded in pg_catalog while its objects live in their own schema.
	 */
	if (SPI_execute("SELECT n.nspname FROM pg_catalog.pg_extension e "
					"JOIN pg_catalog.pg_depend d "
					"  ON d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_extension'::pg_catalog.regclass "
					" AND d.refobjid OPERATOR(pg_catalog.=) e.oid "
					" AND d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass "
					" AND d.deptype OPERATOR(pg_catalog.=) 'e' "
					"JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) d.objid "
					" AND c.relname OPERATOR(pg_catalog.=) 'registry' "
					"JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace "
					"WHERE e.extname OPERATOR(pg_catalog.=) 'idempotent_inbox'",
					true, 1) == SPI_OK_SELECT && SPI_processed == 1)
	{
		char	   *nspname = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);

		*schema = MemoryContextStrdup(outer, quote_identifier(nspname));
		relids = registry_with_retention(*schema, "registry", outer);
		/* Outboxes came with 0.3; a database still at 0.2 has none. */
		if (OidIsValid(get_relname_relid("outbox_registry", get_namespace_oid(nspname, false))))
			*outboxes = registry_with_retention(*schema, "outbox_registry", outer);
	}
	step_end();

	return relids;
}

/*
 * One batch of inbox.purge() or inbox.purge_outbox() (function) in its own
 * transaction; returns the rows it deleted.
 */
static int64
purge_one_batch(const char *schema, const char *function, Oid relid)
{
	Oid			argtypes[2] = {REGCLASSOID, INT4OID};
	Datum		values[2] = {ObjectIdGetDatum(relid), Int32GetDatum(purge_batch)};
	int64		purged = 0;
	bool		isnull;

	step_begin();
	if (SPI_execute_with_args(psprintf("SELECT %s.%s($1, $2)", schema, function),
							  2, argtypes, values, NULL, false, 1) == SPI_OK_SELECT &&
		SPI_processed == 1)
		purged = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc,
											 1, &isnull));
	step_end();

	return purged;
}

/*
 * Purge one inbox or outbox batch by batch until a batch comes back short.  An
 * error (the table dropped meanwhile, a lock timeout) is logged and ends its
 * turn; the others are still purged.
 */
static void
purge_table(const char *schema, const char *function, Oid relid)
{
	MemoryContext outer = CurrentMemoryContext;

	PG_TRY();
	{
		int64		purged;

		do
		{
			CHECK_FOR_INTERRUPTS();
			pgstat_report_activity(STATE_RUNNING, strcmp(function, "purge") == 0 ?
								   "purging expired claims" : "purging sent events");
			purged = purge_one_batch(schema, function, relid);
		} while (purged >= purge_batch);
	}
	PG_CATCH();
	{
		MemoryContextSwitchTo(outer);
		/* Before anything else: the timer must not fire into the cleanup. */
		disable_timeout(STATEMENT_TIMEOUT, false);
		EmitErrorReport();
		FlushErrorState();
		AbortCurrentTransaction();
	}
	PG_END_TRY();
	pgstat_report_activity(STATE_IDLE, NULL);
}

void
purge_database_main(Datum arg)
{
	List	   *relids;
	List	   *outboxes = NIL;
	ListCell   *lc;
	char	   *schema = NULL;

	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();
	if (IsBinaryUpgrade)
		proc_exit(0);
	BackgroundWorkerInitializeConnectionByOid(DatumGetObjectId(arg), InvalidOid, 0);
	visit_deadline = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), VISIT_BUDGET_MS);
	before_shmem_exit(report_overrun, (Datum) 0);
	enable_timeout_after(RegisterTimeout(USER_TIMEOUT, visit_hard_limit_reached),
						 VISIT_HARD_LIMIT_MS);

	if (!extension_installed())
		leave("the extension is not installed here");

	/*
	 * A purge must never wait long behind DDL on an inbox; the next pass retries.
	 * Set at the highest priority, so that no SET in an owner's trigger lifts the
	 * bound (the statement timeout is armed per transaction in step_begin).
	 */
	SetConfigOption("lock_timeout", WORKER_LOCK_TIMEOUT, PGC_SUSET, PGC_S_OVERRIDE);
	SetConfigOption("search_path", "pg_catalog, pg_temp", PGC_SUSET, PGC_S_SESSION);
	SetConfigOption("application_name", "idempotent_inbox purge", PGC_USERSET, PGC_S_SESSION);

	relids = inboxes_with_retention(&schema, &outboxes);
	foreach(lc, relids)
		purge_table(schema, "purge", lfirst_oid(lc));
	foreach(lc, outboxes)
		purge_table(schema, "purge_outbox", lfirst_oid(lc));

	proc_exit(0);
}
