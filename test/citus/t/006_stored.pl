# try_claim, fingerprints, stored results and leases of a sharded inbox on Citus (a
# coordinator and two workers): the _sharded forms give the one-node answers through
# the coordinator and inside functions delegated to the workers, where they never
# wait for another transaction's claim, and claim_apply_many_sharded takes one
# account's poll in one call; and, under a load of payments (try_claim,
# the effect and complete in one transaction) and charges (acquire, the effect and
# finish), a worker killed with kill -9 and shards moved in both transfer modes end
# with every payment and every charge applied exactly once, each with its result.

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

$c->safe_psql(
	'postgres', q{
CREATE EXTENSION idempotent_inbox;
SELECT inbox.create_sharded_inbox('keys', 'account', 'bigint', 'text', retention => '1 day');
SELECT create_distributed_table('keys', 'account', shard_count => 4);
CREATE TABLE accounts (account bigint PRIMARY KEY, balance bigint NOT NULL DEFAULT 0);
SELECT create_distributed_table('accounts', 'account', colocate_with => 'keys');
CREATE TABLE charges (account bigint NOT NULL, key text NOT NULL, amount bigint NOT NULL);
SELECT create_distributed_table('charges', 'account', colocate_with => 'keys');
});

sub q1 { return $c->safe_psql('postgres', $_[0]); }

sub sqlstate_of
{
	my ($sql) = @_;
	my ($rc, $out, $err) = $c->psql('postgres', "\\set VERBOSITY verbose\n$sql");
	return $err =~ /ERROR:\s+([0-9A-Z]{5})/ ? $1 : "no error ($out)";
}

# ---------------------------------------------------------------------------
# 1. Every answer, through the coordinator.
# ---------------------------------------------------------------------------

is( q1(q{SELECT inbox.try_claim_sharded('keys', 1, 'm1') || ',' || inbox.try_claim_sharded('keys', 1, 'm1')
	      || ',' || inbox.try_claim_sharded('keys', 2, 'm1')}),
	'claimed,duplicate,claimed', 'try_claim_sharded: claimed, duplicate, another shard key');
is( q1(q{SELECT inbox.claim_sharded('keys', 1, 'f1', '\x01'::bytea)::text || ','
	      || inbox.claim_sharded('keys', 1, 'f1', '\x01'::bytea)::text}),
	'true,false', 'a fingerprinted claim, and its duplicate with the same payload');
is(sqlstate_of(q{SELECT inbox.claim_sharded('keys', 1, 'f1', '\x02'::bytea)}),
	'22I01', 'the same key with another payload is an error');
q1(q{BEGIN; SELECT inbox.claim_sharded('keys', 3, 'r1');
     SELECT inbox.complete_sharded('keys', 3, 'r1', '{"receipt": 7}'); COMMIT;});
is( q1(q{SELECT inbox.result_sharded('keys', 3, 'r1')::text || ',' || coalesce(inbox.result_sharded('keys', 4, 'r1')::text, '-')}),
	'{"receipt": 7},-', 'complete_sharded and result_sharded, per (shard key, id)');
is(sqlstate_of(q{SELECT inbox.complete_sharded('keys', 4, 'r1', '{}')}),
	'55000', 'complete_sharded of an id not claimed');

is(q1(q{SELECT status FROM inbox.acquire_sharded('keys', 5, 'k1', '1 minute')}), 'acquired',
	'acquire_sharded');
my $token = q1(q{SELECT token FROM keys WHERE account = 5 AND message_id = 'k1'});
is(q1(q{SELECT status FROM inbox.acquire_sharded('keys', 5, 'k1', '1 minute')}), 'in_progress',
	'a live lease is in progress');
q1("SELECT inbox.finish_sharded('keys', 5, 'k1', $token, '{\"done\": 1}')");
is( q1(q{SELECT status || ',' || result FROM inbox.acquire_sharded('keys', 5, 'k1', '1 minute')}),
	'completed,{"done": 1}', 'finished: completed with the stored result');
is(sqlstate_of("SELECT inbox.finish_sharded('keys', 6, 'k1', $token, NULL)"),
	'55I01', 'a token of another shard key value is stale');
q1(q{SELECT status FROM inbox.acquire_sharded('keys', 5, 'k2', '1 second')});
my $old = q1(q{SELECT token FROM keys WHERE account = 5 AND message_id = 'k2'});
sleep 2;
is( q1(qq{SELECT status || ',' || (token > $old) FROM inbox.acquire_sharded('keys', 5, 'k2', '1 minute')}),
	'acquired,true', 'a lease whose time is up is taken over with a higher token');
is(sqlstate_of("SELECT inbox.release_sharded('keys', 5, 'k2', $old)"), '55I01',
	'the old token is fenced off');
$token = q1(q{SELECT token FROM keys WHERE account = 5 AND message_id = 'k2'});
q1("SELECT inbox.release_sharded('keys', 5, 'k2', $token)");
is(q1(q{SELECT count(*) FROM keys WHERE account = 5 AND message_id = 'k2'}), '0',
	'release_sharded forgets the attempt');
is( sqlstate_of(q{SELECT * FROM inbox.acquire_sharded('keys', 5, 'k3', '1 minute', session_bound => true)}),
	'0A000', 'session-bound leases are refused on a distributed inbox');
is(sqlstate_of(q{SELECT inbox.try_claim('keys', 'm1')}), '42809',
	'the plain forms do not name a claim of a sharded inbox');
# Failures and key ordering need the failures tables distribute_failures makes
# (008_failures.pl): without them, refused on the coordinator and on a worker,
# saying how to make them, and nothing recorded on one node.
foreach my $call (
	q{SELECT * FROM inbox.record_failure_sharded('keys', 5, 'p1', 'boom')},
	q{SELECT inbox.claim_in_order_sharded('keys', 5, 'p1', 'k')},
	q{SELECT inbox.retry_sharded('keys', 5, 'p1')})
{
	is(sqlstate_of($call), '55000', "no failures tables: $call");
}
my (undef, undef, $refusal) = $workers[0]->psql('postgres',
	q{SELECT * FROM inbox.record_failure_sharded('keys', 5, 'p1', 'boom')});
like($refusal, qr/inbox "keys" has no failures tables.*distribute_failures/s,
	'a worker refuses it too, saying what to run');
is(q1(q{SELECT count(*) FROM inbox.failures}), '0', 'nothing recorded');
is(q1(q{SELECT pg_relation_size('keys')}), '0', 'the shell stayed empty');

# ---------------------------------------------------------------------------
# 2. Delegated to the worker holding the shard key: one remote command, the same
#    answers, and no wait for another transaction's claim.
# ---------------------------------------------------------------------------

# pay and charge are delegated to the worker of their account; pay_routed and
# charge_routed, the same bodies, run on the coordinator, their statements routed.
foreach my $suffix ('', '_routed')
{
	q1(qq{
CREATE FUNCTION pay$suffix(acc bigint, id text, amount bigint) RETURNS text LANGUAGE plpgsql AS \$\$
DECLARE
    status text := inbox.try_claim_sharded('keys', acc, id);
BEGIN
    IF status = 'claimed' THEN
        INSERT INTO accounts VALUES (acc, amount)
            ON CONFLICT (account) DO UPDATE SET balance = accounts.balance + amount;
        PERFORM inbox.complete_sharded('keys', acc, id, jsonb_build_object('paid', amount));
    END IF;
    RETURN status;
END \$\$;
CREATE FUNCTION charge$suffix(acc bigint, key text, amount bigint) RETURNS text LANGUAGE plpgsql AS \$\$
DECLARE
    lease record;
BEGIN
    SELECT * INTO lease FROM inbox.acquire_sharded('keys', acc, key, '1 minute',
                                                   inbox.fingerprint(jsonb_build_object('amount', amount)));
    IF lease.status = 'acquired' THEN
        INSERT INTO charges VALUES (acc, key, amount);
        PERFORM inbox.finish_sharded('keys', acc, key, lease.token, jsonb_build_object('charged', amount));
    END IF;
    RETURN lease.status;
END \$\$;
});
}
q1(q{SELECT create_distributed_function('pay(bigint,text,bigint)', 'acc', colocate_with := 'keys');
     SELECT create_distributed_function('charge(bigint,text,bigint)', 'acc', colocate_with := 'keys')});
my (undef, undef, $err) = $c->psql('postgres',
	q{SET citus.log_remote_commands = on; SET client_min_messages = log;
	  SELECT pay(10, 'p0', 5)});
my @issued = $err =~ /issuing (.*?)\n/g;
is(scalar(@issued), 1, 'a delegated call is one remote command');
like($issued[0] // '', qr/pay\(/, 'that command is the call itself');
is( join(',', map { q1("SELECT $_") } (q{pay(10, 'p0', 5)}, q{charge(10, 'c0', 3)}, q{charge(10, 'c0', 3)})),
	'duplicate,acquired,completed', 'inside delegated functions: the same answers');
is(sqlstate_of(q{SELECT charge(10, 'c0', 4)}), '22I01',
	'a delegated acquire compares fingerprints');

# Another session holds an uncommitted claim and an uncommitted lease.
my $holder = $c->background_psql('postgres');
$holder->query_safe(q{BEGIN; SELECT inbox.claim_sharded('keys', 20, 'held');
	SELECT status FROM inbox.acquire_sharded('keys', 20, 'leased', '1 minute')});
q1(q{CREATE FUNCTION try_it(acc bigint, id text) RETURNS text LANGUAGE plpgsql AS $$
     BEGIN RETURN inbox.try_claim_sharded('keys', acc, id); END $$;
     SELECT create_distributed_function('try_it(bigint,text)', 'acc', colocate_with := 'keys');});
# (Citus delegates a call that is the whole of its SELECT, so one call a statement.)
is( join(',', map { $c->safe_psql('postgres', "SET statement_timeout = '5s'; SELECT $_") }
		  (q{try_it(20, 'held')}, q{charge(20, 'leased', 1)}, q{try_it(20, 'free')})),
	'in_progress,in_progress,claimed',
	'delegated: an uncommitted claim or lease is in progress, answered without waiting');
is(sqlstate_of(q{SET statement_timeout = '1s'; SELECT inbox.try_claim_sharded('keys', 20, 'held')}),
	'57014', 'through the coordinator try_claim_sharded waits for it (cancelled here)');
$holder->query_safe('COMMIT');
$holder->quit;
is(q1(q{SELECT try_it(20, 'held')}) . ',' . q1(q{SELECT inbox.try_claim_sharded('keys', 20, 'held')}),
	'duplicate,duplicate', 'once it commits, a duplicate on both paths');
# inbox.stats on the coordinator adds what the workers counted: delegated calls
# count on the worker that ran them.
my $counts = q{SELECT claims || ',' || duplicates FROM inbox.stats WHERE inbox = 'keys'::regclass};
my ($claims0, $dups0) = split /,/, q1($counts);
q1("SELECT try_it($_, 'counted')") for 60 .. 69;
q1("SELECT try_it($_, 'counted')") for 60 .. 64;
my ($claims1, $dups1) = split /,/, q1($counts);
is(($claims1 - $claims0) . ',' . ($dups1 - $dups0), '10,5',
	'inbox.stats on the coordinator counts the claims and duplicates of delegated calls');
is( $workers[0]->safe_psql('postgres', q{SELECT claims > 0 FROM inbox.live_counters('keys')})
	  . ',' . $workers[1]->safe_psql('postgres', q{SELECT claims > 0 FROM inbox.live_counters('keys')}),
	't,t', 'each worker counted its own share');

# The window reaches the workers (the inbox's window marker): an expired claim is
# absent in a delegated call too.
q1(q{UPDATE keys SET claimed_at = now() - interval '2 days' WHERE account = 20 AND message_id = 'held'});
is(q1(q{SELECT try_it(20, 'held')}) . ',' . q1(q{SELECT try_it(20, 'held')}), 'claimed,duplicate',
	'delegated: an expired claim counts as absent, as on one node');

# claim_apply_many_sharded: a poll of one account's messages in one delegated call.
q1(q{
CREATE FUNCTION pay_batch(acc bigint, ids text[], amounts bigint[]) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    RETURN (SELECT string_agg(outcome::text, ',') FROM inbox.claim_apply_many_sharded('keys', acc, ids,
        'INSERT INTO accounts SELECT m.acc, sum(m.amount) FROM unnest($2::bigint[], $3::bigint[]) m(amount, acc)
         GROUP BY m.acc ON CONFLICT (account) DO UPDATE SET balance = accounts.balance + EXCLUDED.balance',
        amounts, array_fill(acc, ARRAY[cardinality(ids)])));
END $$;
SELECT create_distributed_function('pay_batch(bigint,text[],bigint[])', 'acc', colocate_with := 'keys');
});
my $batch_out;
(undef, $batch_out, $err) = $c->psql('postgres',
	q{SET citus.log_remote_commands = on; SET client_min_messages = log;
	  SELECT pay_batch(30, ARRAY['b1', 'b2', 'b1'], ARRAY[1, 10, 100])});
@issued = $err =~ /issuing (.*?)\n/g;
is(scalar(@issued) . ',' . $batch_out, '1,applied,applied,duplicate',
	'a delegated claim_apply_many_sharded is one remote command, with every answer');
is(q1(q{SELECT pay_batch(30, ARRAY['b2', 'b3'], ARRAY[1000, 10000])}), 'duplicate,applied',
	'a replayed batch applies only its new message');
is( q1(q{SELECT string_agg(outcome::text, ',') FROM inbox.claim_apply_many_sharded('keys', 31, ARRAY['b1', 'b1'],
	      'UPDATE accounts SET balance = balance WHERE account = 31')}),
	'applied,duplicate', 'claim_apply_many_sharded through the coordinator');
is(q1(q{SELECT balance FROM accounts WHERE account = 30}), '10011',
	'each message of the batches applied once');

# ---------------------------------------------------------------------------
# 3. Faults under load: per account, payments p1..p3 of 1, 10 and 100 and charges
#    c1, c2 of 1000 and 10000, delivered by psql scripts through the coordinator, half
#    to the delegated functions, half to the routed ones.  A delivery is acknowledged
#    when it was answered (not in_progress); every message is redelivered anyway.
# ---------------------------------------------------------------------------

sub messages_of
{
	my ($first, $last) = @_;
	return map {
		my $a = $_;
		((map { [ $a, 'pay', "p$_", 10**($_ - 1) ] } 1 .. 3),
			(map { [ $a, 'charge', "c$_", 10**($_ + 2) ] } 1 .. 2))
	} $first .. $last;
}

my $deliveries = Deliveries->new(
	node  => $c,
	name  => 'stored',
	label => sub { join ' ', @{ $_[0] }[ 0 .. 2 ] },
	# Half the deliveries to the delegated functions, half to the routed ones.
	sql => sub {
		my ($m, $i) = @_;
		my ($a, $kind, $id, $amount) = @$m;
		return "SELECT $kind" . ($i % 2 ? '_routed' : '') . "($a, '$id', $amount)";
	},
	acked => sub { $_[1] ne 'in_progress' });

# Every account as one application of each message leaves it.
sub check_accounts
{
	my ($first, $last, $what) = @_;
	is( q1("SELECT string_agg(account || ':' || balance, ',' ORDER BY account)
	          FROM accounts WHERE account BETWEEN $first AND $last"),
		join(',', map { "$_:111" } $first .. $last),
		"$what: every payment applied once");
	is( q1("SELECT count(*) || ',' || count(DISTINCT (account, key)) || ',' || sum(amount)
	          FROM charges WHERE account BETWEEN $first AND $last"),
		join(',', 2 * ($last - $first + 1), 2 * ($last - $first + 1), 11000 * ($last - $first + 1)),
		"$what: every charge made once");
	is( q1("SELECT count(*) FROM keys WHERE account BETWEEN $first AND $last
	          AND result IS NOT NULL AND lease_until IS NULL"),
		5 * ($last - $first + 1), "$what: every message has its result, no lease left running");
}

Deliveries::faults(
	deliveries  => $deliveries,
	coordinator => $c,
	workers     => \@workers,
	messages    => \&messages_of,
	check       => \&check_accounts,
	killed      => [ 100, 299 ],
	started     => q{SELECT count(*) > 20 FROM accounts WHERE account >= 100},
	# A dead worker adds nothing to the coordinator's counters and is no error.
	while_down => sub {
		like(q1(q{SELECT claims FROM inbox.stats WHERE inbox = 'keys'::regclass}), qr/^\d+$/,
			'inbox.stats answers on the coordinator while a worker is down');
	},
	table => 'keys');

$_->stop for ($coordinator, @workers);
done_testing();
