
# The background purge, run by the launcher when the library is preloaded.
# Expired claims must go in every database that has the extension, with
# nothing else touched: not the fresh claims, not a database without the
# extension even if it has look-alike tables.  purge_interval must follow a
# reload both ways, and the launcher must come back after a crash restart
# of the cluster and after being killed itself.

use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $expired_per_inbox = 1000;
my @inbox_dbs = ('postgres', 'shop');

my $node = PostgreSQL::Test::Cluster->new('purge_worker');
$node->init;
$node->append_conf(
	'postgresql.conf', q{
shared_preload_libraries = 'idempotent_inbox'
idempotent_inbox.purge_interval = 1
# Small batches, so that each inbox takes several transactions.
idempotent_inbox.purge_batch = 100
# The test framework turns this off; a killed child must make the
# postmaster reinitialise, and the launcher must come back with it.
restart_after_crash = on
});
$node->start;

sub query { return $node->safe_psql(@_); }

# poll_query_until with a deadline of about $seconds instead of the
# framework's three minutes.
sub within
{
	my ($seconds, $db, $sql) = @_;
	local $PostgreSQL::Test::Utils::timeout_default = $seconds;
	return $node->poll_query_until($db, $sql);
}

sub launcher_pid
{
	return query('postgres',
		q{SELECT pid FROM pg_stat_activity
		   WHERE backend_type = 'idempotent_inbox launcher'});
}

query('postgres', 'CREATE DATABASE shop');
query('postgres', 'CREATE DATABASE plain');
foreach my $db (@inbox_dbs)
{
	query(
		$db, q{
CREATE EXTENSION idempotent_inbox;
SELECT inbox.create_inbox('events', 'text', '1 hour');
});
}

# A database without the extension but with an inbox-shaped registry and
# table: only pg_extension may tell the worker where to purge.
query(
	'plain', q{
CREATE SCHEMA inbox;
CREATE TABLE inbox.registry (relid regclass, retention interval);
CREATE TABLE events (message_id text PRIMARY KEY,
                     claimed_at timestamptz NOT NULL);
INSERT INTO inbox.registry VALUES ('events', '1 hour');
INSERT INTO events
  SELECT 'old-' || i, now() - interval '2 hours' FROM generate_series(1, 100) i;
});

# Claims made two hours ago, written directly: inbox.claim stamps now().
sub insert_expired
{
	my ($db, $prefix, $n) = @_;
	query($db,
		    "INSERT INTO events (message_id, claimed_at) "
		  . "SELECT '$prefix-' || i, now() - interval '2 hours' "
		  . "FROM generate_series(1, $n) i");
}

# True once no claim whose id starts with $prefix is left, within $seconds.
sub purged_within
{
	my ($seconds, $db, $prefix) = @_;
	return within($seconds, $db,
		"SELECT count(*) = 0 FROM events WHERE message_id LIKE '$prefix-%'");
}

sub expired_left
{
	my ($db) = @_;
	return query($db,
		"SELECT count(*) FROM events WHERE claimed_at < now() - interval '1 hour'"
	);
}

ok(within(30, 'postgres',
		q{SELECT count(*) = 1 FROM pg_stat_activity
		   WHERE backend_type = 'idempotent_inbox launcher'}),
	'the launcher runs');

foreach my $db (@inbox_dbs)
{
	query($db,
		"SELECT inbox.claim('events', 'fresh-' || i) FROM generate_series(1, 5) i");
	insert_expired($db, 'old', $expired_per_inbox);
}

foreach my $db (@inbox_dbs)
{
	ok(purged_within(30, $db, 'old'),
		"$db: the worker purged every expired claim");
	is(query($db, "SELECT count(*) FROM events WHERE message_id LIKE 'fresh-%'"),
		5, "$db: fresh claims are kept");
	# The worker purges through inbox.purge, so its deletions are counted
	# with the inbox, and the live counters exist because we are preloaded.
	is(query($db, 'SELECT claims || \'/\' || purged FROM inbox.stats'),
		"5/$expired_per_inbox",
		"$db: stats count the claims and every purged row");
}

# Outboxes: the worker deletes the events sent longer ago than the retention, as
# the outbox's owner (its trigger sees the owner as current_user, under a
# restricted operation), and never an unsent event, however old.
query(
	'shop', q{
CREATE ROLE outbox_owner;
GRANT CREATE ON SCHEMA public TO outbox_owner;
GRANT USAGE ON SCHEMA inbox TO outbox_owner;
SET ROLE outbox_owner;
SELECT inbox.create_outbox('public.shop_events', '1 hour');
CREATE TABLE purged_by (who name, restricted boolean);
CREATE FUNCTION note_purge() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO public.purged_by VALUES (current_user,
    NOT EXISTS (SELECT FROM pg_settings WHERE name = 'search_path' AND setting LIKE '%public%'));
  RETURN OLD;
END$$;
CREATE TRIGGER note_purge BEFORE DELETE ON shop_events FOR EACH ROW EXECUTE FUNCTION note_purge();
SELECT inbox.emit('shop_events', 'sent.long.ago', 'k', '{}') FROM generate_series(1, 3);
SELECT inbox.emit('shop_events', 'unsent', 'k', '{}');
UPDATE shop_events SET sent_at = now() - interval '2 hours' WHERE topic = 'sent.long.ago';
UPDATE shop_events SET emitted_at = now() - interval '2 days' WHERE topic = 'unsent';
RESET ROLE;
});
ok(within(30, 'shop', "SELECT count(*) = 0 FROM shop_events WHERE topic = 'sent.long.ago'"),
	'shop: the worker purged the events sent before the retention');
is(query('shop', "SELECT count(*) FROM shop_events WHERE topic = 'unsent'"),
	1, 'shop: an unsent event is never purged');
is(query('shop', 'SELECT DISTINCT who || \'/\' || restricted FROM purged_by'),
	'outbox_owner/true', "shop: the outbox's trigger ran as its owner, search_path pinned");

is(query('plain', 'SELECT count(*) FROM events'),
	100, 'plain: a database without the extension is left alone');
ok(!$node->log_contains('ERROR:'), 'no worker logged an error');
unlike(
	slurp_file($node->logfile),
	qr/idempotent_inbox purge.*exited with exit code [1-9]/,
	'every purge worker exited cleanly');

# purge_interval = 0 turns the purge off at the next reload.
query('postgres',
	'ALTER SYSTEM SET idempotent_inbox.purge_interval = 0; SELECT pg_reload_conf()');
# A pass already under way when the signal arrived may still finish.
sleep 3;
insert_expired($_, 'paused', 200) foreach @inbox_dbs;
sleep 3;
foreach my $db (@inbox_dbs)
{
	is(expired_left($db), 200,
		"$db: nothing is purged while purge_interval = 0");
}

# Switched back on, the launcher must wake at the reload rather than at its
# idle wakeup a minute later.
query('postgres',
	'ALTER SYSTEM SET idempotent_inbox.purge_interval = 1; SELECT pg_reload_conf()');
foreach my $db (@inbox_dbs)
{
	ok(purged_within(20, $db, 'paused'),
		"$db: purging resumes soon after purge_interval is set back to 1");
}

# A crash of the whole cluster: the launcher is a static worker and must be
# started again with it.
$node->stop('immediate');
$node->start;
ok(within(30, 'postgres',
		q{SELECT count(*) = 1 FROM pg_stat_activity
		   WHERE backend_type = 'idempotent_inbox launcher'}),
	'the launcher is back after an immediate shutdown and restart');
insert_expired($_, 'after-restart', 300) foreach @inbox_dbs;
foreach my $db (@inbox_dbs)
{
	ok(purged_within(30, $db, 'after-restart'),
		"$db: purging works after the restart");
	# Counters describe traffic since the server started.
	is(query($db, 'SELECT purged FROM inbox.stats'),
		300, "$db: the purge counter started again from zero");
}

# SIGKILL of the launcher itself: the postmaster cannot know what it left in
# shared memory, so it reinitialises everything; the launcher must return.
my $old_pid = launcher_pid();
my $log_offset = -s $node->logfile;
kill 'KILL', $old_pid;
# Until the postmaster has reaped it, the dead launcher still shows.
ok(within(60, 'postgres',
		qq{SELECT count(*) = 1 FROM pg_stat_activity
		    WHERE backend_type = 'idempotent_inbox launcher' AND pid <> $old_pid}),
	'a new launcher is running after the old one was killed');
ok($node->log_contains(
		qr/"idempotent_inbox launcher" \(PID $old_pid\) was terminated by signal 9/,
		$log_offset),
	'the postmaster saw the launcher die');
insert_expired($_, 'after-kill', 300) foreach @inbox_dbs;
foreach my $db (@inbox_dbs)
{
	ok(purged_within(30, $db, 'after-kill'),
		"$db: purging works after the launcher was killed");
	is(query($db, "SELECT count(*) FROM events WHERE message_id LIKE 'fresh-%'"),
		5, "$db: fresh claims survived every pass");
}
is(query('plain', 'SELECT count(*) FROM events'),
	100, 'plain: still untouched at the end');

# An inbox owner whose trigger swallows the purge's statement timeout (a loop
# catching query_canceled) holds the worker only until the visit's hard limit:
# the worker then ends as SIGTERM ends it, the launcher purges the other
# databases again, and DROP DATABASE of the hostile one goes through.
query('postgres', 'CREATE DATABASE hostile');
query('postgres', 'CREATE ROLE mallory LOGIN');
query(
	'hostile', q{
CREATE EXTENSION idempotent_inbox;
GRANT CREATE ON SCHEMA public TO mallory;
SET ROLE mallory;
SELECT inbox.create_inbox('stuck', 'text', '1 hour');
CREATE FUNCTION public.hang() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    LOOP
        BEGIN
            PERFORM pg_sleep(1000);
        EXCEPTION WHEN query_canceled THEN
            NULL;
        END;
    END LOOP;
END $$;
CREATE TRIGGER hang BEFORE DELETE ON stuck FOR EACH ROW EXECUTE FUNCTION public.hang();
INSERT INTO stuck (message_id, claimed_at) VALUES ('old', now() - interval '2 hours');
});
$log_offset = -s $node->logfile;
ok(within(120, 'postgres',
		q{SELECT count(*) = 1 FROM pg_stat_activity
		   WHERE datname = 'hostile' AND wait_event = 'PgSleep'}),
	'the purge worker runs the hostile trigger');
insert_expired($_, 'after-hostile', 100) foreach @inbox_dbs;
foreach my $db (@inbox_dbs)
{
	ok(purged_within(240, $db, 'after-hostile'),
		"$db: purged again after a worker was held by a trigger that swallows its cancel");
}
ok($node->log_contains(qr/purge worker ended its visit to database \d+ after 95 s/, $log_offset),
	'the held worker was ended at its hard limit, and said why');
my ($rc, $out, $err) = $node->psql('postgres', 'DROP DATABASE hostile', timeout => 240);
is($rc, 0, 'DROP DATABASE of the hostile database goes through');

$node->stop;
done_testing();
