# claim_apply_many_sharded on Citus (a coordinator and two workers) under faults: polls
# of one account's messages, each one call, half delegated to the account's worker and
# half through the coordinator, while a worker is killed with kill -9 and shards move in
# both transfer modes; every message of every poll applied exactly once, redelivered
# polls (whole or in part) applying nothing again.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/..";
use CitusCluster;
use Deliveries;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my ($coordinator, @workers) = CitusCluster::start(workers => 2, preload => 1);
my $c = $coordinator;

sub q1 { return $c->safe_psql('postgres', $_[0]); }

$c->safe_psql(
	'postgres', q{
CREATE EXTENSION idempotent_inbox;
SELECT inbox.create_sharded_inbox('polls', 'account', 'bigint');
SELECT create_distributed_table('polls', 'account', shard_count => 4);
CREATE TABLE accounts (account bigint PRIMARY KEY, balance bigint NOT NULL DEFAULT 0,
                       applied int NOT NULL DEFAULT 0);
SELECT create_distributed_table('accounts', 'account', colocate_with => 'polls');
INSERT INTO accounts SELECT a FROM generate_series(100, 1400) a;
-- A poll: the messages' amounts are 1, 10 and 100 by their id's last digit; the
-- statement adds each fresh message's amount and counts it.
CREATE FUNCTION poll(acct bigint, ids text[]) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    RETURN (SELECT string_agg(outcome::text, ',' ORDER BY ord)
              FROM inbox.claim_apply_many_sharded('polls', acct, ids,
                     'UPDATE accounts SET balance = balance + (SELECT sum(10 ^ right(i, 1)::int)::bigint FROM unnest($1) i),
                             applied = applied + cardinality($1) WHERE account = $2[1]',
                     array_fill(acct, ARRAY[cardinality(ids)])) WITH ORDINALITY AS r(message_id, outcome, ord));
END $$;
SELECT create_distributed_function('poll(bigint,text[])', '$1', colocate_with := 'polls');
CREATE FUNCTION poll_routed(acct bigint, ids text[]) RETURNS text
LANGUAGE sql AS $$ SELECT poll(acct, ids) || '' $$;
});

is(q1(q{SELECT poll(100, '{m0,m1,m2}')}), 'applied,applied,applied', 'a fresh poll, delegated');
is(q1(q{SELECT poll_routed(100, '{m1,m2,m3}')}), 'duplicate,duplicate,applied',
	'a poll redelivered in part, through the coordinator');
is(q1(q{SELECT balance || ',' || applied FROM accounts WHERE account = 100}), '1111,4',
	'each message applied once');
q1(q{UPDATE accounts SET balance = 0, applied = 0 WHERE account = 100; DELETE FROM polls WHERE account = 100});

# Per account, two polls that share a message: {a0,a1} and {a1,b2}; an account's
# messages are a0 (1), a1 (10) and b2 (100), applied once each: 111 in 3.
sub messages_of
{
	my ($first, $last) = @_;
	return map { ([ $_, 'p', '{a0,a1}' ], [ $_, 'q', '{a1,b2}' ]) } $first .. $last;
}

my $deliveries = Deliveries->new(
	node  => $c,
	name  => 'batches',
	label => sub { join ' ', @{ $_[0] }[ 0 .. 1 ] },
	sql   => sub {
		my ($m, $i) = @_;
		return 'SELECT poll' . ($i % 2 ? '_routed' : '') . "($m->[0], '$m->[2]')";
	});

sub check_accounts
{
	my ($first, $last, $what) = @_;
	my $n = $last - $first + 1;
	is( q1("SELECT count(*) FILTER (WHERE balance = 111 AND applied = 3) || ',' || count(*)
	          FROM accounts WHERE account BETWEEN $first AND $last"),
		"$n,$n", "$what: every message of every poll applied once");
	is(q1("SELECT count(*) FROM polls WHERE account BETWEEN $first AND $last"), 3 * $n,
		"$what: one claim per message");
}

Deliveries::faults(
	deliveries  => $deliveries,
	coordinator => $c,
	workers     => \@workers,
	messages    => \&messages_of,
	check       => \&check_accounts,
	killed      => [ 100, 299 ],
	started     => q{SELECT count(*) > 20 FROM polls WHERE account >= 100},
	table       => 'polls');

$_->stop for ($coordinator, @workers);
done_testing();
