# dedup_trigger on a distributed table co-located with a sharded inbox (a
# coordinator and two workers): the trigger fires on the worker that holds the
# row's shard and claims (shard key, id) in the inbox's shard beside it, in the
# same local transaction; rows of seen ids are dropped whether they come through
# the coordinator, from a session on a worker, in a function delegated to the
# worker, or in an INSERT ... SELECT; and under a load of events, a worker killed
# with kill -9 and shards moved in both transfer modes leave every event stored
# exactly once.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/..";
use CitusCluster;
use Deliveries;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my ($coordinator, @workers) = CitusCluster::start(workers => 2);
my $c = $coordinator;

$c->safe_psql(
	'postgres', q{
CREATE EXTENSION idempotent_inbox;
SELECT inbox.create_sharded_inbox('seen', 'account', 'bigint', 'text');
SELECT create_distributed_table('seen', 'account', shard_count => 4);
CREATE TABLE events (account bigint NOT NULL, id text, amount bigint NOT NULL);
SELECT create_distributed_table('events', 'account', colocate_with => 'seen');
-- Citus asks for this to create a trigger on a distributed table, which it then
-- creates on every shard.
SET citus.enable_unsafe_triggers = on;
CREATE TRIGGER events_dedup BEFORE INSERT ON events
    FOR EACH ROW EXECUTE FUNCTION inbox.dedup_trigger('seen', 'id');
});

sub q1 { return $c->safe_psql('postgres', $_[0]); }

sub sqlstate_of
{
	my ($node, $sql) = @_;
	my ($rc, $out, $err) = $node->psql('postgres', "\\set VERBOSITY verbose\n$sql");
	return $err =~ /ERROR:\s+([0-9A-Z]{5})/ ? $1 : "no error ($out)";
}

# ---------------------------------------------------------------------------
# 1. Every way in.
# ---------------------------------------------------------------------------

is( q1(q{SELECT count(*) FROM run_command_on_shards('events',
	      $$SELECT count(*) FROM pg_trigger WHERE tgrelid = '%s'::regclass AND tgname ~ '^events_dedup_'$$)
	      WHERE result = '1'}),
	'4', 'the trigger is on every shard of the table');
q1(q{INSERT INTO events VALUES (1, 'e1', 1)});
q1(q{INSERT INTO events VALUES (1, 'e1', 2), (2, 'e1', 4), (2, 'e1', 8), (3, 'e2', 16)});
is( q1(q{SELECT string_agg(account || ':' || id || ':' || amount, ',' ORDER BY account) FROM events}),
	'1:e1:1,2:e1:4,3:e2:16',
	'through the coordinator: a seen (shard key, id) is dropped, another shard key is another message');
is(q1(q{SELECT count(*) FROM seen}), '3', 'one claim per stored row');

q1(q{INSERT INTO events SELECT g % 10, 'g' || (g % 30), g FROM generate_series(1, 60) g});
is(q1(q{SELECT count(*) || ',' || count(DISTINCT (account, id)) FROM events WHERE id LIKE 'g%'}),
	'30,30', 'INSERT ... SELECT across every shard: each (shard key, id) once');

my $w = $workers[0];
$w->safe_psql('postgres', q{INSERT INTO events VALUES (1, 'e1', 32), (4, 'w1', 64)});
$w->safe_psql('postgres', q{INSERT INTO events VALUES (4, 'w1', 128)});
is(q1(q{SELECT string_agg(id || ':' || amount, ',' ORDER BY id) FROM events WHERE account IN (1, 4)}),
	'e1:1,g1:1,g11:11,g14:14,g21:21,g24:24,g4:4,w1:64', 'from a session on a worker: the same');

q1(q{
CREATE FUNCTION deliver(acc bigint, mid text, amount bigint) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    stored bigint;
BEGIN
    INSERT INTO events VALUES (acc, mid, amount);
    GET DIAGNOSTICS stored = ROW_COUNT;
    RETURN CASE WHEN stored = 1 THEN 'stored' ELSE 'dropped' END;
END $$;
CREATE FUNCTION deliver_routed(acc bigint, mid text, amount bigint) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    RETURN deliver(acc, mid, amount);
END $$;
SELECT create_distributed_function('deliver(bigint,text,bigint)', 'acc', colocate_with := 'seen');
});
my (undef, undef, $err) = $c->psql('postgres',
	q{SET citus.log_remote_commands = on; SET client_min_messages = log;
	  SELECT deliver(5, 'd1', 1)});
my @issued = $err =~ /issuing (.*?)\n/g;
is(scalar(@issued), 1, 'a delegated delivery is one remote command');
is( join(',', map { q1("SELECT $_") } (q{deliver(5, 'd1', 1)}, q{deliver(5, 'd2', 1)})),
	'dropped,stored', 'inside a delegated function: the same answers');

# The inbox's window reaches the workers: an expired claim is absent there.
q1(q{SELECT inbox.set_retention('seen', '1 day')});
q1(q{UPDATE seen SET claimed_at = now() - interval '2 days' WHERE account = 5 AND message_id = 'd1'});
is(q1(q{SELECT deliver(5, 'd1', 2) || ',' || deliver(5, 'd1', 3)}), 'stored,dropped',
	'an expired claim lets its row through once, on the worker');

# A bad row fails on the worker with the one-node error, and stores nothing.
is(sqlstate_of($c, q{INSERT INTO events VALUES (66, NULL, 1)}), '22004',
	'a NULL id is refused by the trigger on the worker');
is(q1(q{SELECT count(*) FROM events WHERE account = 66}), '0', 'nothing stored for it');

# An inbox made by create_inbox is known on the coordinator only: a trigger on a
# distributed table, which fires on the workers, says so.
q1(q{
SELECT inbox.create_inbox('plain_seen');
SELECT create_distributed_table('plain_seen', 'message_id');
CREATE TABLE plain_events (id text, note text);
SELECT create_distributed_table('plain_events', 'id', colocate_with => 'plain_seen');
SET citus.enable_unsafe_triggers = on;
CREATE TRIGGER plain_dedup BEFORE INSERT ON plain_events
    FOR EACH ROW EXECUTE FUNCTION inbox.dedup_trigger('plain_seen', 'id');
});
my ($rc, $out, $plain_err) = $c->psql('postgres', q{INSERT INTO plain_events VALUES ('x', 'y')});
like($plain_err, qr/"plain_seen" is not an inbox on this Citus worker/,
	'an unsharded inbox on a distributed table: the worker names what it knows');

# ---------------------------------------------------------------------------
# 2. Faults under load: per account, events e1..e3 of 1, 10 and 100, delivered by
#    psql scripts through the coordinator, half to the delegated function, half
#    inserted through the coordinator.  Every message is redelivered anyway.
# ---------------------------------------------------------------------------

sub messages_of
{
	my ($first, $last) = @_;
	return map {
		my $a = $_;
		map { [ $a, "e$_", 10**($_ - 1) ] } 1 .. 3
	} $first .. $last;
}

my $deliveries = Deliveries->new(
	node  => $c,
	name  => 'dedup',
	label => sub { join ' ', @{ $_[0] }[ 0 .. 1 ] },
	sql   => sub {
		my ($m, $i) = @_;
		my ($a, $id, $amount) = @$m;
		return "SELECT deliver" . ($i % 2 ? '_routed' : '') . "($a, '$id', $amount)";
	});

sub check_events
{
	my ($first, $last, $what) = @_;
	is( q1("SELECT string_agg(account || ':' || total, ',' ORDER BY account)
	          FROM (SELECT account, sum(amount) AS total FROM events
	                 WHERE account BETWEEN $first AND $last GROUP BY account) t"),
		join(',', map { "$_:111" } $first .. $last),
		"$what: every event of every account stored once");
	is( q1("SELECT count(*) || ',' || count(DISTINCT (account, id)) FROM events
	         WHERE account BETWEEN $first AND $last"),
		join(',', (3 * ($last - $first + 1)) x 2), "$what: no event stored twice");
	is(q1("SELECT count(*) FROM seen WHERE account BETWEEN $first AND $last"),
		3 * ($last - $first + 1), "$what: one claim per event");
}

Deliveries::faults(
	deliveries  => $deliveries,
	coordinator => $c,
	workers     => \@workers,
	messages    => \&messages_of,
	check       => \&check_events,
	killed      => [ 100, 399 ],
	started     => q{SELECT count(*) > 20 FROM events WHERE account >= 100},
	table       => 'seen');

$_->stop for ($coordinator, @workers);
done_testing();
