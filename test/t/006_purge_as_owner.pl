
# The background purge acts as each inbox's owner, and minds its manners.
#
# The worker connects as the bootstrap superuser.  A role that may only create
# tables puts on its inbox a BEFORE DELETE trigger, a DO ALSO rule and a partial
# index whose predicate calls a function; each records who it ran as and tries
# ALTER ROLE ... SUPERUSER.  After the worker has purged, the role must not be
# superuser and everything must have run as the owner, restricted, with
# search_path pinned.  Then: a database without the extension is left at once;
# DROP DATABASE of a database the worker is busy in succeeds; SIGHUP and SIGTERM
# end a busy worker's visit; and a server in binary-upgrade mode starts no
# worker at all.

use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('purge_as_owner');
$node->init;
$node->append_conf(
	'postgresql.conf', q{
shared_preload_libraries = 'idempotent_inbox'
idempotent_inbox.purge_interval = 1
# Small batches: a visit to the slow inbox below is many short transactions.
idempotent_inbox.purge_batch = 5
# The worker says at DEBUG1 why it leaves a database.
log_min_messages = debug1
});
$node->start;

sub query { return $node->safe_psql(@_); }

# The same, connected as a role.
sub query_as
{
	my ($role, $db, $sql) = @_;
	return $node->safe_psql($db, $sql, extra_params => [ '-U', $role ]);
}

sub within
{
	my ($seconds, $db, $sql) = @_;
	local $PostgreSQL::Test::Utils::timeout_default = $seconds;
	return $node->poll_query_until($db, $sql);
}

# --- The owner's code runs as the owner --------------------------------------
#
# Nothing in this test reads me.box as a superuser: planning any statement on it
# evaluates the predicate (that is PostgreSQL's behaviour, for every table).

query(
	'postgres', q{
CREATE EXTENSION idempotent_inbox;
CREATE ROLE mallory LOGIN;
CREATE SCHEMA me AUTHORIZATION mallory;
});

query_as(
	'mallory', 'postgres', q{
CREATE TABLE me.log (what text, app text, cur name, sess name, super bool,
                     path text, escalation text);
CREATE FUNCTION me.escalate() RETURNS text LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  EXECUTE 'ALTER ROLE mallory SUPERUSER';
  RETURN 'succeeded';
EXCEPTION WHEN OTHERS THEN
  RETURN 'refused: ' || SQLSTATE;
END $$;
CREATE FUNCTION me.spy(what text) RETURNS boolean LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  INSERT INTO me.log
    SELECT what, pg_catalog.current_setting('application_name'), current_user,
           session_user, r.rolsuper, pg_catalog.current_setting('search_path'),
           me.escalate()
      FROM pg_catalog.pg_roles r WHERE r.rolname = current_user;
  RETURN true;
END $$;
CREATE FUNCTION me.spy_trigger() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN PERFORM me.spy(TG_NAME); RETURN OLD; END $$;
CREATE FUNCTION me.spy_predicate(int) RETURNS boolean LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN RETURN me.spy('index predicate'); END $$;

SELECT inbox.create_inbox('me.box', 'text', '1 second');
CREATE TRIGGER spy_before_delete BEFORE DELETE ON me.box
  FOR EACH ROW EXECUTE FUNCTION me.spy_trigger();
CREATE RULE spy_rule AS ON DELETE TO me.box DO ALSO
  INSERT INTO me.log
    SELECT 'rule', pg_catalog.current_setting('application_name'), current_user,
           session_user, r.rolsuper, pg_catalog.current_setting('search_path'),
           me.escalate()
      FROM pg_catalog.pg_roles r WHERE r.rolname = current_user;
CREATE INDEX spy_partial ON me.box (message_id) WHERE me.spy_predicate(0);
TRUNCATE me.log;
SELECT inbox.claim('me.box', 'id-' || i) FROM generate_series(1, 3) i;
});

my $by_worker = q{app = 'idempotent_inbox purge'};
ok( within(
		60, 'postgres',
		qq{SELECT count(*) FILTER (WHERE what = 'spy_before_delete') = 3
		      AND count(*) FILTER (WHERE what = 'rule') = 3
		      AND count(*) FILTER (WHERE what = 'index predicate') > 0
		     FROM me.log WHERE $by_worker}),
	'the worker purged the inbox, firing its trigger, rule and predicate');
is(query('postgres', q{SELECT rolsuper FROM pg_roles WHERE rolname = 'mallory'}),
	'f', 'the owner did not become superuser');
is( query(
		'postgres', qq{
SELECT string_agg(DISTINCT format('%s as %s, superuser %s, path %s, %s',
                                  what, cur, super, path, escalation), E'\n')
  FROM me.log WHERE $by_worker}),
	join("\n",
		'index predicate as mallory, superuser f, path pg_catalog, pg_temp, refused: 42501',
		'rule as mallory, superuser f, path pg_catalog, pg_temp, refused: 42501',
		'spy_before_delete as mallory, superuser f, path pg_catalog, pg_temp, refused: 42501'
	),
	'everything the worker ran on the inbox ran as its owner, restricted');
is(query('postgres', q{SELECT count(*) FROM me.log WHERE cur <> 'mallory' OR super}),
	0, 'nothing ran as anyone else, anywhere');
is(query_as('mallory', 'postgres', 'SELECT count(*) FROM me.box'),
	0, 'the claims were purged');

# --- A database without the extension is left at once ------------------------

query('postgres', 'CREATE DATABASE plain');
my $plain_oid = query('postgres', q{SELECT oid FROM pg_database WHERE datname = 'plain'});
my $offset = -s $node->logfile;
ok( $node->wait_for_log(
		qr/purge worker leaving database $plain_oid: the extension is not installed here/,
		$offset),
	'the worker leaves a database without the extension at once');

# --- DROP DATABASE of a database the worker is busy in ---------------------------
#
# Each deleted claim sleeps 0.2 s, so the worker is in "busy" for minutes.
# PostgreSQL 15's DROP DATABASE signals autovacuum but waits only 5 s for other
# sessions, a background worker among them; the worker must get out of the way.

query('postgres', 'CREATE DATABASE busy');
query(
	'busy', q{
CREATE EXTENSION idempotent_inbox;
SELECT inbox.create_inbox('slow', 'text', '1 second');
CREATE FUNCTION slow_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN PERFORM pg_catalog.pg_sleep(0.2); RETURN OLD; END $$;
CREATE TRIGGER slow_before_delete BEFORE DELETE ON slow
  FOR EACH ROW EXECUTE FUNCTION slow_delete();
INSERT INTO slow (message_id, claimed_at)
  SELECT 'old-' || i, now() - interval '1 hour' FROM generate_series(1, 2000) i;
});

my $worker_in_busy = q{SELECT pid FROM pg_stat_activity
                        WHERE datname = 'busy' AND backend_type = 'idempotent_inbox purge'};
ok(within(60, 'postgres', "SELECT EXISTS ($worker_in_busy)"),
	'the worker is purging the slow inbox');

# SIGHUP: a reload that turns the purge off ends a visit under way, between
# two batches; turned on again, the next pass comes back.
$offset = -s $node->logfile;
query('postgres',
	'ALTER SYSTEM SET idempotent_inbox.purge_interval = 0; SELECT pg_reload_conf()');
ok( within(30, 'postgres', "SELECT NOT EXISTS ($worker_in_busy)"),
	'a reload setting purge_interval = 0 ends the visit under way');
ok($node->log_contains(qr/purge worker leaving database \d+: the purge was turned off/, $offset),
	'the worker said why it left');
query('postgres',
	'ALTER SYSTEM SET idempotent_inbox.purge_interval = 1; SELECT pg_reload_conf()');
ok(within(60, 'postgres', "SELECT EXISTS ($worker_in_busy)"),
	'set back to 1, the worker visits again');

# SIGTERM ends the busy worker (it is sleeping in the owner's trigger).
my $pid = query('postgres', $worker_in_busy);
query('postgres', "SELECT pg_terminate_backend($pid)");
ok( within(10, 'postgres',
		"SELECT NOT EXISTS (SELECT FROM pg_stat_activity WHERE pid = $pid)"),
	'SIGTERM ends a busy worker');
ok(within(60, 'postgres', "SELECT EXISTS ($worker_in_busy)"),
	'the next pass visits the database again');

my ($ret, $stdout, $stderr) = $node->psql('postgres', 'DROP DATABASE busy');
is($ret, 0, 'DROP DATABASE of a database the worker is busy in succeeds');
is($stderr, '', 'DROP DATABASE said nothing');
is(query('postgres', q{SELECT count(*) FROM pg_database WHERE datname = 'busy'}),
	0, 'the database is gone');

# --- Binary upgrade ------------------------------------------------------------
#
# pg_upgrade starts the server with -b; no launcher may run there.

$node->stop;
$offset = -s $node->logfile;
command_ok(
	[
		'pg_ctl', '-D', $node->data_dir, '-l', $node->logfile,
		'-o', '-b', '-w', 'start'
	],
	'the server starts in binary-upgrade mode');
sleep 3;
is( query(
		'postgres',
		q{SELECT count(*) FROM pg_stat_activity
		   WHERE backend_type LIKE 'idempotent_inbox%'}),
	0,
	'no purge launcher or worker runs during a binary upgrade');
ok(!$node->log_contains(qr/starting background worker process "idempotent_inbox/, $offset),
	'nor was one started');
command_ok([ 'pg_ctl', '-D', $node->data_dir, '-m', 'fast', '-w', 'stop' ],
	'the binary-upgrade server stops');

done_testing();
