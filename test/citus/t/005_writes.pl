# upsert, transition and state machines on Citus tables (a coordinator and two
# workers): the same answers as on one node, on distributed and reference tables,
# through the coordinator and inside functions delegated to the workers; and, under a
# load of order messages, a worker killed with kill -9 and shards moved in both
# transfer modes end with every order exactly as one application of each message
# leaves it, and no payment moved twice.

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
CREATE TYPE order_state AS ENUM ('NEW', 'PAID', 'SHIPPED');
CREATE TABLE orders (id bigint PRIMARY KEY, state order_state NOT NULL DEFAULT 'NEW',
                     amount bigint, ver int, note text, step int NOT NULL DEFAULT 0);
SELECT create_distributed_table('orders', 'id', shard_count => 4);
CREATE TABLE currencies (code text PRIMARY KEY, name text, state text);
SELECT create_reference_table('currencies');
});

sub q1 { return $c->safe_psql('postgres', $_[0]); }

# ---------------------------------------------------------------------------
# 1. Every answer, through the coordinator.
# ---------------------------------------------------------------------------

is( q1(q{SELECT inbox.upsert('orders', '{"id": 1, "amount": 10, "note": "a"}')}),
	'inserted', 'upsert inserts into a distributed table');
is( q1(q{SELECT inbox.upsert('orders', '{"id": 1, "amount": 10, "note": "a"}')}),
	'unchanged', 'the same row again is unchanged');
is( q1(q{SELECT inbox.upsert('orders', '{"id": 1, "amount": 11}')}),
	'updated', 'a changed value is updated');
is( q1(q{SELECT inbox.upsert('orders', '{"id": 1, "note": "b", "ver": 5}', version_column => 'ver')}),
	'updated', 'a versioned upsert over a NULL version is updated');
is( q1(q{SELECT inbox.upsert('orders', '{"id": 1, "note": "old", "ver": 4}', version_column => 'ver')}),
	'stale', 'an older version is stale');
is(q1(q{SELECT amount || ',' || note || ',' || ver FROM orders WHERE id = 1}),
	'11,b,5', 'the stored row is the one the answers describe');
is( q1(q{SELECT inbox.upsert('currencies', '{"code": "EUR", "name": "euro"}') || ','
	      || inbox.upsert('currencies', '{"code": "EUR", "name": "euro"}') || ','
	      || inbox.upsert('currencies', '{"code": "EUR", "name": "Euro"}')}),
	'inserted,unchanged,updated', 'upsert on a reference table');
is( q1(q{SELECT count(*) FROM run_command_on_workers(
	      $$SELECT name FROM currencies WHERE code = 'EUR'$$) WHERE result = 'Euro'}),
	'2', 'the reference table changed on both workers');

# States of an enum column compare as values, of a text or int column by text form.
is( q1(q{SELECT string_agg(x::text, ',') FROM (VALUES
	      (inbox.transition('orders', '{"id": 1}', 'state', ARRAY['NEW'], 'PAID')),
	      (inbox.transition('orders', '{"id": 1}', 'state', ARRAY['NEW'], 'PAID')),
	      (inbox.transition('orders', '{"id": 1}', 'state', ARRAY['SHIPPED'], 'NEW')),
	      (inbox.transition('orders', '{"id": 99}', 'state', ARRAY['NEW'], 'PAID'))) v(x)}),
	'moved,already,rejected,missing', 'transition on an enum column: every answer');
is( q1(q{SELECT inbox.transition_key('orders', 1::bigint, 'step', ARRAY['0'], '1') || ','
	      || inbox.transition_key('orders', 1::bigint, 'step', ARRAY['0'], '1')}),
	'moved,already', 'transition_key on an int column');
is( q1(q{INSERT INTO currencies VALUES ('USD', 'dollar', 'draft');
	     SELECT inbox.transition('currencies', '{"code": "USD"}', 'state', ARRAY['draft'], 'live')}),
	'moved', 'transition on a reference table');
is(q1(q{SELECT state || ',' || step FROM orders WHERE id = 1}), 'PAID,1', 'the moves are stored');
is(q1(q{SELECT pg_relation_size('orders') + pg_relation_size('currencies')}),
	'0', 'the shells stayed empty: every write went to the shards');

# A state whose text form depends on a setting (a timestamptz's on TimeZone) can
# only be compared by a STABLE function, which Citus refuses in an UPDATE.
$c->safe_psql('postgres', 'ALTER TABLE orders ADD COLUMN due timestamptz');
my ($rc, $out, $err) = $c->psql('postgres',
	q{SELECT inbox.transition_key('orders', 1::bigint, 'due', ARRAY['2026-01-01'], '2026-02-01')});
like($err, qr/STABLE functions used in UPDATE queries cannot be called with column references/,
	'a timestamptz state column is refused by Citus, with its reason');

# ---------------------------------------------------------------------------
# 2. State machines: the trigger goes to every shard.
# ---------------------------------------------------------------------------

q1(q{SELECT inbox.guard_transitions('orders', 'state', '{"NEW": ["PAID"], "PAID": ["SHIPPED"]}')});
is(q1(q{SHOW citus.enable_unsafe_triggers}), 'off',
	'guard_transitions leaves citus.enable_unsafe_triggers as it was');
is( q1(q{SELECT count(*) FROM run_command_on_shards('orders',
	      $$SELECT count(*) FROM pg_trigger WHERE tgrelid = '%s'::regclass AND tgname LIKE 'inbox_guard_state%%'$$)
	    WHERE result = '1'}),
	'4', 'every shard of orders has the machine');
q1(q{INSERT INTO orders (id) VALUES (2)});
($rc, $out, $err) = $c->psql('postgres', q{UPDATE orders SET state = 'SHIPPED' WHERE id = 2});
like($err, qr/illegal state transition from "NEW" to "SHIPPED"/,
	'a shard refuses a move the machine forbids');
is( q1(q{SELECT inbox.transition_key('orders', 2::bigint, 'state', NULL, 'PAID') || ','
	      || inbox.transition_key('orders', 2::bigint, 'state', NULL, 'PAID') || ','
	      || inbox.transition_key('orders', 2::bigint, 'state', NULL, 'NEW')}),
	'moved,already,rejected', 'transition takes its sources from the machine');
is(q1(q{SELECT inbox.unguard_transitions('orders', 'state')}), 't', 'unguard_transitions');
is( q1(q{SELECT count(*) FROM run_command_on_shards('orders',
	      $$SELECT count(*) FROM pg_trigger WHERE tgrelid = '%s'::regclass AND tgname LIKE 'inbox_guard_state%%'$$)
	    WHERE result = '0'}),
	'4', 'the machine is gone from every shard');
q1(q{SELECT inbox.guard_transitions('orders', 'state', '{"NEW": ["PAID"], "PAID": ["SHIPPED"]}')});

# ---------------------------------------------------------------------------
# 3. The consumer of order messages, delegated: a message places an order
#    (versioned upsert) or pays it (a move from NEW to PAID, which the machine
#    allows once).
# ---------------------------------------------------------------------------

q1(q{
CREATE FUNCTION on_order(oid bigint, kind text, ver int, amount bigint) RETURNS text
LANGUAGE plpgsql AS $$
BEGIN
    IF kind = 'place' THEN
        RETURN inbox.upsert('orders', jsonb_build_object('id', oid, 'amount', amount, 'ver', ver),
                            version_column => 'ver');
    END IF;
    RETURN inbox.transition_key('orders', oid, 'state', NULL, 'PAID');
END $$;
SELECT create_distributed_function('on_order(bigint,text,int,bigint)', '$1',
                                   colocate_with := 'orders');
});
(undef, undef, $err) = $c->psql('postgres',
	q{SET citus.log_remote_commands = on; SET client_min_messages = log;
	  SELECT on_order(3, 'place', 1, 30)});
my @issued = $err =~ /issuing (.*?)\n/g;
is(scalar(@issued), 1, 'a delegated call is one remote command');
like($issued[0] // '', qr/on_order\(/, 'that command is the call itself');
is( q1(q{SELECT on_order(3, 'place', 1, 30) || ',' || on_order(3, 'pay', 0, 0) || ','
	      || on_order(3, 'pay', 0, 0) || ',' || on_order(3, 'place', 2, 31)}),
	'stale,moved,already,updated', 'inside a delegated function: the same answers');

# ---------------------------------------------------------------------------
# 4. Faults under load.  Each order gets three versions of "place" and one "pay",
#    delivered by psql scripts through the coordinator, half delegated, half as
#    direct calls routed from there.  Acknowledged means the call returned; every
#    message is redelivered afterwards anyway (at least once, as a broker would).
# ---------------------------------------------------------------------------

my %moved;    # order => acknowledged 'moved' answers

sub messages_of
{
	my ($first, $last) = @_;
	return map {
		my $o = $_;
		((map { [ $o, 'place', $_, $o * 100 + $_ ] } 1 .. 3), [ $o, 'pay', 0, 0 ])
	} $first .. $last;
}

sub delivery_sql
{
	my ($m, $direct) = @_;
	my ($o, $kind, $ver, $amount) = @$m;
	return "SELECT on_order($o, '$kind', $ver, $amount)" unless $direct;
	return $kind eq 'place'
	  ? "SELECT inbox.upsert('orders', jsonb_build_object('id', $o, 'amount', $amount, 'ver', $ver), version_column => 'ver')"
	  : "SELECT inbox.transition_key('orders', ${o}::bigint, 'state', NULL, 'PAID')";
}

my $deliveries = Deliveries->new(
	node  => $c,
	name  => 'writes',
	label => sub { join ' ', @{ $_[0] }[ 0 .. 2 ] },
	# Half the deliveries through on_order (delegated), half direct.
	sql   => sub { delivery_sql($_[0], $_[1] % 2) },
	acked => sub {
		my ($label, $answer) = @_;
		$moved{ (split / /, $label)[0] }++ if $answer eq 'moved';
		return 1;
	});

# The orders as one application of every message leaves them: the last version's
# amount, paid.
sub check_orders
{
	my ($first, $last, $what) = @_;
	is( q1("SELECT string_agg(id || ':' || state || ':' || amount || ':' || ver, ',' ORDER BY id)
	          FROM orders WHERE id BETWEEN $first AND $last"),
		join(',', map { "$_:PAID:" . ($_ * 100 + 3) . ':3' } $first .. $last),
		"$what: every order placed at its last version and paid");
	is(join(',', grep { ($moved{$_} // 0) > 1 } $first .. $last), '',
		"$what: no order was moved to PAID twice");
}

Deliveries::faults(
	deliveries  => $deliveries,
	coordinator => $c,
	workers     => \@workers,
	messages    => \&messages_of,
	check       => \&check_orders,
	killed      => [ 100, 399 ],
	started     => q{SELECT count(*) > 20 FROM orders WHERE id >= 100},
	table       => 'orders');

$_->stop for ($coordinator, @workers);
done_testing();
