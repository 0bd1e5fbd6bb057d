# A sharded inbox co-located with the table its effects write: a consumer function
# delegated to the worker that holds the shard claims and applies there, in one local
# transaction.  Citus's own diagnostics show it: one remote command (the call) and no
# two-phase commit, where an inbox distributed by message id needs one.  Then what
# each feature does on a distributed inbox: claim_many, retention and purge, stats,
# positions, and the functions that refuse it.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/..";
use CitusCluster;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my ($coordinator, @workers) = CitusCluster::start(workers => 2);
my $c = $coordinator;

$c->safe_psql(
	'postgres', q{
CREATE EXTENSION idempotent_inbox;
CREATE TABLE accounts (id bigint PRIMARY KEY, balance bigint NOT NULL DEFAULT 0);
SELECT create_distributed_table('accounts', 'id');
INSERT INTO accounts SELECT i FROM generate_series(1, 20) i;
SELECT inbox.create_sharded_inbox('payments_inbox', 'account_id', 'bigint');
SELECT create_distributed_table('payments_inbox', 'account_id', colocate_with => 'accounts');

-- PL/pgSQL: a one-SELECT SQL function would be inlined into the caller's query, and
-- Citus would never see a call to delegate.
CREATE FUNCTION consume(acct bigint, mid text, amount bigint) RETURNS inbox.outcome
LANGUAGE plpgsql AS $$
BEGIN
    RETURN inbox.claim_apply_sharded('payments_inbox', acct, mid,
        'UPDATE accounts SET balance = balance + $1 WHERE id = $2', amount, acct);
END $$;
SELECT create_distributed_function('consume(bigint,text,bigint)', '$1',
                                   colocate_with := 'accounts');
});

# The marker travels with the table: the workers' shells carry it, and there the
# registry has no row, yet the table is an inbox.
for my $i (0 .. $#workers)
{
	my $w = $workers[$i];
	is( $w->safe_psql(
			'postgres', q{
SELECT (SELECT count(*) FROM inbox.registry),
       (SELECT pg_get_constraintdef(oid) FROM pg_constraint
         WHERE conrelid = 'payments_inbox'::regclass AND conname = 'idempotent_inbox')}),
		'0|CHECK ((message_id IS NOT NULL))',
		'worker' . ($i + 1) . ': no registry row, the marker on the shell');
}

# The node that holds account $acct's shards.
sub node_of
{
	my ($table, $acct) = @_;
	return $c->safe_psql(
		'postgres', qq{
SELECT p.nodeport FROM pg_dist_placement pl JOIN pg_dist_node p ON p.groupid = pl.groupid
 WHERE pl.shardid = get_shard_id_for_distribution_column('$table', '$acct')});
}

# One call through the coordinator, with what Citus sent where.
sub traced
{
	my ($sql) = @_;
	my ($rc, $out, $err) = $c->psql('postgres',
		"SET citus.log_remote_commands = on; $sql",
		on_error_stop => 1);
	my @issued = $err =~ /NOTICE:  issuing (.*)/g;
	return ($rc, $out, \@issued);
}

my $dist_tx = q{SELECT count(*) FROM pg_dist_transaction};
my $before = $c->safe_psql('postgres', $dist_tx);
my ($rc, $out, $issued) = traced(q{SELECT consume(3, 'm1', 5)});
is($out, 'applied', 'the delegated consumer applies a fresh message');
is(scalar(@$issued), 1, 'the coordinator sent one command');
like($issued->[0], qr/^SELECT public\.consume\('3'::bigint, 'm1'::text, '5'::bigint\)/,
	'and that command is the call itself, run on the worker');
unlike(join("\n", @$issued), qr/PREPARE TRANSACTION/, 'no two-phase commit');
is($c->safe_psql('postgres', $dist_tx), $before, 'no distributed transaction recorded');

($rc, $out, $issued) = traced(q{SELECT consume(3, 'm1', 5)});
is($out, 'duplicate', 'a redelivery to the worker is a duplicate');
is(scalar(@$issued), 1, 'again one command');

# The worker that ran it holds the claim and the effect in its shards.
my $port = node_of('accounts', 3);
is(node_of('payments_inbox', 3), $port, 'the claim and the account share a node');
my ($holder) = grep { $_->port == $port } @workers;
is( $holder->safe_psql(
		'postgres', q{
SET citus.show_shards_for_app_name_prefixes = '*';
SELECT (SELECT balance FROM accounts WHERE id = 3),
       (SELECT count(*) FROM payments_inbox WHERE account_id = 3)}),
	'5|1', 'on that worker: the balance and the one claim');

# For contrast, an inbox distributed by message id: the claim and the effect land on
# different workers whenever the id hashes away from the account, and Citus commits
# the pair with two-phase commit.
$c->safe_psql(
	'postgres', q{
SELECT inbox.create_inbox('loose_inbox', 'text');
SELECT create_distributed_table('loose_inbox', 'message_id');
});
my $far;
for my $i (1 .. 200)
{
	my $node = $c->safe_psql('postgres',
		qq{SELECT p.nodeport FROM pg_dist_placement pl JOIN pg_dist_node p ON p.groupid = pl.groupid
		    WHERE pl.shardid = get_shard_id_for_distribution_column('loose_inbox', 'far$i')});
	if ($node ne $port) { $far = "far$i"; last; }
}
ok(defined $far, 'found an id whose claim lives away from account 3');
($rc, $out, $issued) = traced(
	qq{SELECT inbox.claim_apply('loose_inbox', '$far',
	     'UPDATE accounts SET balance = balance + \$1 WHERE id = \$2', 5, 3::bigint)});
is($out, 'applied', 'the non-co-located claim applies');
like(join("\n", @$issued), qr/PREPARE TRANSACTION/, 'and needs two-phase commit');

# Redeliveries across nodes: 60 messages over 20 accounts on both workers, each
# delivered three times, through the delegated function and through the coordinator
# (claim_apply_sharded planned there), in an order that mixes the two.
my @messages = map { [ "p$_", 1 + $_ % 20, $_ ] } 1 .. 60;
my %expected = map { $_ => 0 } 1 .. 20;
$expected{3} = 5 + 5;
$expected{ $_->[1] } += $_->[2] for @messages;
my @calls;
for my $round (1 .. 3)
{
	for my $m ($round == 2 ? reverse @messages : @messages)
	{
		my ($id, $acct, $amount) = @$m;
		push @calls,
		  ($round + $amount) % 2
		  ? "SELECT consume($acct, '$id', $amount);"
		  : "SELECT inbox.claim_apply_sharded('payments_inbox', $acct, '$id', "
		  . "'UPDATE accounts SET balance = balance + \$1 WHERE id = \$2', ${amount}::bigint, ${acct}::bigint);";
	}
}
my $outcomes = $c->safe_psql('postgres', join("\n", @calls));
my $applied = () = $outcomes =~ /applied/g;
is($applied, 60, 'each of the 60 messages applied once in 180 deliveries');
is( $c->safe_psql('postgres',
		q{SELECT string_agg(id || ':' || balance, ',' ORDER BY id) FROM accounts}),
	join(',', map { "$_:$expected{$_}" } 1 .. 20),
	'every balance exact');
is($c->safe_psql('postgres', 'SELECT count(*) FROM payments_inbox'), 61,
	'one claim per message');
is( $c->safe_psql(
		'postgres', q{
SELECT count(DISTINCT n.nodeport)
  FROM (SELECT DISTINCT account_id FROM payments_inbox) a
  JOIN pg_dist_placement pl
    ON pl.shardid = get_shard_id_for_distribution_column('payments_inbox', a.account_id)
  JOIN pg_dist_node n ON n.groupid = pl.groupid}),
	2, 'the claims are spread over both workers');

# claim_many_sharded through the coordinator goes to the one shard of the key.
is( $c->safe_psql(
		'postgres', q{
SELECT string_agg(m, ',') FROM inbox.claim_many_sharded('payments_inbox', 4, ARRAY['b1', 'p3', 'b2', 'b1']) m}),
	'b1,b2', 'claim_many_sharded: the fresh ids, each once');

# Plain claims and claim_many on an inbox distributed by message id.
is( $c->safe_psql(
		'postgres', q{
SELECT inbox.claim('loose_inbox', 'x1'), inbox.claim('loose_inbox', 'x1'),
       (SELECT string_agg(m, ',') FROM inbox.claim_many('loose_inbox', ARRAY['x1', 'x2', 'x3']) m)}),
	't|f|x2,x3', 'an inbox distributed by message id: claim and claim_many');

# Retention: the coordinator keeps the window in its registry, and set_retention
# writes it into the inbox's window marker too, which Citus copies to the workers:
# through the coordinator and in a delegated call alike, an expired claim counts as
# absent and is renewed; purge is one DELETE over every shard.
$c->safe_psql(
	'postgres', q{
SELECT inbox.set_retention('payments_inbox', '1 day');
UPDATE payments_inbox SET claimed_at = now() - interval '2 days' WHERE message_id IN ('p1', 'p2', 'p3');
});
is( $c->safe_psql(
		'postgres', q{SELECT inbox.claim_sharded('payments_inbox', 2, 'p1'), inbox.claim_sharded('payments_inbox', 2, 'p1')}),
	't|f', 'through the coordinator an expired claim is renewed, once');
is( $c->safe_psql('postgres', q{SELECT consume(3, 'p2', 2)}) . ','
	  . $c->safe_psql('postgres', q{SELECT consume(3, 'p2', 2)}),
	'applied,duplicate', 'a delegated call on a worker renews an expired claim too, once');
is( $workers[0]->safe_psql('postgres', q{SELECT count(*) FROM pg_constraint
	  WHERE conname = 'idempotent_inbox_window' AND conrelid = 'payments_inbox'::regclass}),
	'1', 'the workers have the window marker');
is($c->safe_psql('postgres', q{SELECT inbox.purge('payments_inbox')}), 1,
	'purge deletes the expired claims left in every shard');
is($c->safe_psql('postgres', q{SELECT consume(3, 'p2', 2)}), 'duplicate',
	'the renewed claim is kept');
is( $c->safe_psql('postgres', q{SELECT oldest_claim IS NOT NULL FROM inbox.stats WHERE inbox = 'payments_inbox'::regclass}),
	't', 'inbox.stats reads the oldest claim from the shards');

# The same on an inbox distributed by message id, one claim and a batch at a time.
$c->safe_psql(
	'postgres', q{
SELECT inbox.set_retention('loose_inbox', '1 day');
UPDATE loose_inbox SET claimed_at = now() - interval '2 days' WHERE message_id IN ('x2', 'x3');
});
is( $c->safe_psql(
		'postgres', q{
SELECT inbox.claim('loose_inbox', 'x2'), inbox.claim('loose_inbox', 'x2'),
       (SELECT string_agg(m, ',') FROM inbox.claim_many('loose_inbox', ARRAY['x1', 'x3', 'x4']) m)}),
	't|f|x3,x4', 'an inbox distributed by message id renews expired claims too');

# Positions are rows of the coordinator's inbox.positions.
is( $c->safe_psql(
		'postgres', q{SELECT inbox.advance('payments_inbox', 'payments', 0, 10), inbox.advance('payments_inbox', 'payments', 0, 10), inbox.position('payments_inbox', 'payments', 0)}),
	't|f|10', 'positions are kept on the coordinator');

# What reads stored columns reads them from the shards, on an inbox distributed by
# message id too (006_stored.pl covers the _sharded forms).
is( $c->safe_psql(
		'postgres', q{
SELECT inbox.try_claim('loose_inbox', 'x1'), inbox.claim('loose_inbox', 'x9', inbox.fingerprint('{}')),
       (SELECT status FROM inbox.acquire('loose_inbox', 'k', '1 minute')),
       (SELECT status FROM inbox.acquire('loose_inbox', 'k', '1 minute'))}),
	'duplicate|t|acquired|in_progress', 'try_claim, fingerprints and leases on an inbox distributed by message id');
my ($rc2, $out2, $err2) = $c->psql('postgres',
	"\\set VERBOSITY verbose\nSELECT inbox.try_claim('payments_inbox', 'p1')");
like($err2, qr/ERROR:  42809: .*HINT:  Call try_claim_sharded/s,
	'the plain try_claim names no claim of a sharded inbox, and says which form does');

# On a worker, a Citus table without the marker is not an inbox.
$c->safe_psql('postgres',
	q{CREATE TABLE plain (id int PRIMARY KEY); SELECT create_distributed_table('plain', 'id')});
my ($rc3, $out3, $err3) = $workers[0]->psql('postgres', q{SELECT inbox.claim('plain', '1')});
like($err3, qr/"plain" is not an inbox/, 'a worker does not take any Citus table for an inbox');

$_->stop for ($coordinator, @workers);
done_testing();
