
# Failover to a streaming standby.  A consumer acknowledges a message to its
# broker once COMMIT has returned; the broker then never redelivers it.  So an
# acknowledged claim must still be there after the standby is promoted, or the
# message is lost (nothing redelivers it) and whatever the consumer did outside
# the database is done again if it does come back.
#
#  - Synchronous replication (synchronous_standby_names names the standby,
#    synchronous_commit = on): crash the primary right after acknowledged
#    commits, with one more claim in flight; on the promoted standby every
#    acknowledged message is a duplicate and the balance is exact.
#  - Asynchronous replication: with the standby not receiving WAL, a committed
#    and acknowledged claim is lost at failover; its redelivery is applied
#    again (documented here as the hazard it is).
#  - A synchronous commit whose wait for the standby is cancelled has committed
#    locally (WARNING, and COMMIT reports success) but the standby may not have
#    it: a consumer must not acknowledge on that warning.
#  - A hot standby refuses claims (read-only, 25006); the background purge does
#    not run there and starts once the standby is promoted.

use strict;
use warnings;
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use Payments;

my $schema = q{
CREATE EXTENSION idempotent_inbox;
SELECT inbox.create_inbox('payments');
CREATE TABLE accounts (id int PRIMARY KEY, balance bigint NOT NULL);
INSERT INTO accounts VALUES (1, 0);
CREATE TABLE ledger (message_id text, amount int);
};

# A primary with the extension preloaded, and a standby made from its backup.
sub make_pair
{
	my ($name, $primary_conf) = @_;
	my $primary = PostgreSQL::Test::Cluster->new("${name}_primary");
	$primary->init(allows_streaming => 1);
	$primary->append_conf('postgresql.conf',
		"shared_preload_libraries = 'idempotent_inbox'\n" . ($primary_conf // ''));
	$primary->start;
	$primary->safe_psql('postgres', $schema);
	$primary->backup('base');
	my $standby = PostgreSQL::Test::Cluster->new("${name}_standby");
	$standby->init_from_backup($primary, 'base', has_streaming => 1);
	return ($primary, $standby);
}

sub promote_and_wait
{
	my ($node) = @_;
	$node->promote;
	$node->poll_query_until('postgres', 'SELECT NOT pg_is_in_recovery()')
	  or die "$node->{name} did not leave recovery";
}

sub launcher_count
{
	my ($node) = @_;
	return $node->safe_psql('postgres',
		q{SELECT count(*) FROM pg_stat_activity
		   WHERE backend_type = 'idempotent_inbox launcher'});
}

# ---------------------------------------------------------------------------
# Synchronous replication: nothing acknowledged is lost.
# ---------------------------------------------------------------------------

# The primary does not purge (so that the standby's copy keeps expired claims
# for the purge checks below); the standby will purge every second once it
# may.
my ($primary, $standby) = make_pair(
	'sync', q{
idempotent_inbox.purge_interval = 0
synchronous_commit = on
});
$standby->append_conf('postgresql.conf', 'idempotent_inbox.purge_interval = 1');
$standby->start;

# The walreceiver's application_name is the standby's cluster_name.
$primary->safe_psql('postgres',
	"ALTER SYSTEM SET synchronous_standby_names = '"
	  . $standby->name . "'; SELECT pg_reload_conf()");
ok( $primary->poll_query_until(
		'postgres',
		q{SELECT count(*) = 1 FROM pg_stat_replication WHERE sync_state = 'sync'}),
	'sync: the standby is a synchronous standby');

# An inbox with a retention and claims long expired, written directly
# (inbox.claim stamps now()).
$primary->safe_psql(
	'postgres', q{
SELECT inbox.create_inbox('expiring', 'text', '1 hour');
INSERT INTO expiring (message_id, claimed_at)
  SELECT 'old-' || i, now() - interval '2 hours' FROM generate_series(1, 300) i;
});
$primary->wait_for_catchup($standby);

# A hot standby is read-only: claims are refused with PostgreSQL's own error.
foreach my $call (
	"inbox.claim('payments', 'hot-1')",
	"inbox.try_claim('payments', 'hot-1')",
	"inbox.claim_many('payments', ARRAY['hot-1', 'hot-2'])",
	"inbox.claim_apply('payments', 'hot-1', 'SELECT 1')",
	"inbox.advance('payments', 'topic', 0, 1)",
	"inbox.advance('payments', 'topic', 0, 1, 1)",
	"inbox.fence('payments', 'topic', 0, 1)",
	"inbox.claim_offset('payments', 'topic', 0, 1)",
	"inbox.acquire('payments', 'hot-1', '1 minute')")
{
	my (undef, $out, $err) = $standby->psql('postgres',
		"\\set VERBOSITY verbose\nSELECT $call", on_error_stop => 0);
	like($err, qr/ERROR:  25006: cannot execute \S+ in a read-only transaction/,
		"hot standby: $call fails with 25006");
}

# The background purge does not run during recovery: no launcher, and the
# expired claims are still there (a purge attempt would have failed loudly).
sleep 3;
is(launcher_count($standby), 0, 'hot standby: no purge launcher runs');
is($standby->safe_psql('postgres', 'SELECT count(*) FROM expiring'),
	300, 'hot standby: the expired claims are untouched');

# The consumer: one session, each message in its own transaction; a message
# counts as acknowledged once its COMMIT has returned.
my $consumer = $primary->background_psql('postgres');
my @acked;
foreach my $n (1 .. 20)
{
	is($consumer->query_safe(deliver_sql($n)), 'applied', "sync: m$n applied");
	push @acked, $n;
}
# One more in flight: applied in an open transaction that never commits.
$consumer->query_safe('BEGIN');
is($consumer->query_safe(deliver_sql(21)), 'applied', 'sync: m21 applied, not committed');

# Crash right after the last acknowledgement.
$primary->kill9;
$consumer->{run}->kill_kill;

ok($standby->safe_psql('postgres', 'SELECT pg_is_in_recovery()') eq 't',
	'sync: the standby is still a standby before promotion');
my $log_offset = -s $standby->logfile;
promote_and_wait($standby);

# The broker redelivers everything it has not seen acknowledged, and, as
# brokers do, some acknowledged messages too: here all of them, plus
# m21 (in flight) and m22..m25 (never delivered).
my $redelivered = $standby->safe_psql('postgres',
	join(";\n", map { deliver_sql($_) } 1 .. 25));
is_deeply(
	[ split /\n/, $redelivered ],
	[ (('duplicate') x 20), (('applied') x 5) ],
	'sync: every acknowledged message is a duplicate on the new primary, the rest applied');
is($standby->safe_psql('postgres', 'SELECT balance FROM accounts WHERE id = 1'),
	sum_of(1 .. 25), 'sync: the balance counts every message exactly once');
is( $standby->safe_psql(
		'postgres',
		'SELECT count(*) || \'/\' || count(DISTINCT message_id) FROM ledger'),
	'25/25',
	'sync: the ledger has one row per message');

# Promoted, the node purges: the launcher starts and the expired claims go.
ok( $standby->poll_query_until(
		'postgres',
		q{SELECT count(*) = 1 FROM pg_stat_activity
		   WHERE backend_type = 'idempotent_inbox launcher'}),
	'promoted: the purge launcher starts');
ok($standby->poll_query_until('postgres', 'SELECT count(*) = 0 FROM expiring'),
	'promoted: the expired claims are purged');
# (The walreceiver's complaints about the dead primary may come after the offset
# was read: they are expected, and not the extension's.  Its lines do not always
# name it: "could not connect to the primary server", "could not receive data
# from WAL stream".)
ok( !$standby->log_contains(
		qr/^(?!.*(?:walreceiver|could not connect to the primary server|could not receive data from WAL stream)).*\b(ERROR|FATAL):/m,
		$log_offset),
	'promoted: no error logged since promotion');
unlike(
	slurp_file($standby->logfile),
	qr/idempotent_inbox (launcher|purge).*exited with exit code [1-9]/,
	'every purge process exited cleanly, before and after promotion');
is($standby->safe_psql('postgres', "SELECT inbox.claim('payments', 'after')"),
	't', 'promoted: claims work');
$standby->stop;

# ---------------------------------------------------------------------------
# Asynchronous replication: an acknowledged claim can be lost.
# ---------------------------------------------------------------------------

($primary, $standby) = make_pair('async');
$standby->start;

# What the consumer did outside the database after each acknowledged
# delivery (an e-mail, a call to another service): the double effect the
# inbox exists to prevent.
my %sent;

sub consume
{
	my ($node, $n) = @_;
	my $outcome = $node->safe_psql('postgres', deliver_sql($n));
	$sent{"m$n"}++ if $outcome eq 'applied';
	return $outcome;
}

is(consume($primary, 1), 'applied', 'async: m1 applied');
$primary->wait_for_catchup($standby);

# The standby stops receiving WAL; COMMIT on the primary still returns, and
# the consumer acknowledges m2.
$standby->stop;
is(consume($primary, 2), 'applied', 'async: m2 applied and acknowledged');

# ---------------------------------------------------------------------------
# A synchronous commit whose wait is cancelled: committed locally, reported
# as a success with a WARNING, absent from the standby.
# ---------------------------------------------------------------------------

$primary->safe_psql('postgres',
	"ALTER SYSTEM SET synchronous_standby_names = '"
	  . $standby->name . "'; SELECT pg_reload_conf()");
$primary->poll_query_until('postgres',
	"SELECT current_setting('synchronous_standby_names') <> ''")
  or die 'synchronous_standby_names not reloaded';

my ($out, $err) = ('', '');
my $waiting = IPC::Run::start(
	[
		'psql', '-X', '-q', '-A', '-t', '-v', 'ON_ERROR_STOP=1',
		'-d', $primary->connstr('postgres'),
		'-c', 'SET application_name = waiting_consumer',
		'-c', deliver_sql(3)
	],
	'>', \$out, '2>', \$err);
ok( $primary->poll_query_until(
		'postgres',
		q{SELECT count(*) = 1 FROM pg_stat_activity
		   WHERE application_name = 'waiting_consumer' AND wait_event = 'SyncRep'}),
	'cancel: the commit of m3 waits for the stopped standby');
is( $primary->safe_psql(
		'postgres', "SELECT count(*) FROM payments WHERE message_id = 'm3'"),
	0, 'cancel: while it waits, other sessions do not see the claim');
$primary->safe_psql('postgres',
	q{SELECT pg_cancel_backend(pid) FROM pg_stat_activity
	   WHERE application_name = 'waiting_consumer'});
ok($waiting->finish, 'cancel: the client sees its statement succeed (exit 0)');
chomp $out;
is($out, 'applied', 'cancel: and the outcome "applied"');
like(
	$err,
	qr/WARNING:  canceling wait for synchronous replication.*\n.*DETAIL:  The transaction has already committed locally, but might not have been replicated to the standby/s,
	'cancel: the only sign is the WARNING: a consumer must not acknowledge on it');
is( $primary->safe_psql(
		'postgres',
		"SELECT count(*) FROM payments WHERE message_id = 'm3'"),
	1, 'cancel: the claim is committed on the primary');

# The primary dies; the standby, which saw neither m2 nor m3, takes over.
$primary->stop('immediate');
$standby->start;
promote_and_wait($standby);

is( $standby->safe_psql(
		'postgres',
		q{SELECT string_agg(message_id, ',' ORDER BY message_id) FROM payments}),
	'm1', 'async: the promoted standby has only m1: m2 and m3 are gone');
is($standby->safe_psql('postgres', 'SELECT balance FROM accounts WHERE id = 1'),
	1, 'async: with their effects');

is(consume($standby, 1), 'duplicate', 'async: m1 (replicated) is a duplicate');
is(consume($standby, 2), 'applied',
	'async: m2, acknowledged, is NOT a duplicate on the new primary: applied again');
is(consume($standby, 3), 'applied', 'cancel: m3 is not a duplicate either');
is($sent{m2}, 2, 'async: the outside effect of the acknowledged m2 happened twice');
is($standby->safe_psql('postgres', 'SELECT balance FROM accounts WHERE id = 1'),
	6, 'async: the balance is right only because m2 and m3 were redelivered');

$standby->stop;
done_testing();
