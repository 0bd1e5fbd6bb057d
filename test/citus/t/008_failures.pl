# Poison messages and per-key ordering of a sharded inbox on Citus (a coordinator and
# two workers), in the failures tables distribute_failures makes beside it: attempts
# counted into one row by calls through the coordinator and calls delegated to the
# worker, quarantine at the inbox's max_attempts (which reaches the workers), the
# operator's verbs with their audit rows, a key's lock met by both kinds of call; and,
# under a load where every account has a poisoned message, a worker killed with kill -9
# and shards moved in both transfer modes end with every good payment applied once and
# every poisoned one quarantined after exactly max_attempts failures, its rows moved
# with its shard.

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

sub sqlstate_of
{
	my ($sql, $node) = @_;
	my ($rc, $out, $err) = ($node // $c)->psql('postgres', "\\set VERBOSITY verbose\n$sql");
	return $err =~ /ERROR:\s+([0-9A-Z]{5})/ ? $1 : "no error ($out)";
}

$c->safe_psql(
	'postgres', q{
CREATE EXTENSION idempotent_inbox;
SELECT inbox.create_sharded_inbox('pays', 'account', 'bigint', 'text', retention => '1 day');
SELECT create_distributed_table('pays', 'account', shard_count => 4);
CREATE TABLE accounts (account bigint PRIMARY KEY, balance bigint NOT NULL DEFAULT 0);
SELECT create_distributed_table('accounts', 'account', colocate_with => 'pays');
INSERT INTO accounts SELECT a FROM generate_series(1, 20) a;
SELECT inbox.create_inbox('plain');
SELECT inbox.create_sharded_inbox('local_only', 'account', 'bigint');
});

# ---------------------------------------------------------------------------
# 1. Without failures tables: refused with the way out; distribute_failures' errors.
# ---------------------------------------------------------------------------

my (undef, undef, $err) = $c->psql('postgres',
	q{SELECT * FROM inbox.record_failure_sharded('pays', 5, 'p1', 'boom')});
like($err, qr/inbox "pays" has no failures tables.*distribute_failures\('public\.pays'\)/s,
	'a Citus inbox without failures tables says how to make them');
(undef, undef, $err) = $workers[0]->psql('postgres',
	q{SELECT inbox.claim_in_order_sharded('pays', 5, 'p1', 'k')});
like($err, qr/has no failures tables/, 'a worker says so too');
is(q1(q{SELECT count(*) FROM inbox.failures}), '0', 'nothing recorded on one node');
is(sqlstate_of(q{SELECT inbox.distribute_failures('local_only')}), '55000',
	'distribute_failures: an inbox Citus does not distribute');
is(sqlstate_of(q{SELECT inbox.distribute_failures('accounts')}), '42809',
	'distribute_failures: not an inbox');
is(sqlstate_of(q{SELECT inbox.distribute_failures('pays')}, $workers[0]), '55000',
	'distribute_failures: only on the coordinator');

q1(q{SELECT inbox.distribute_failures('pays')});
is( q1(q{SELECT string_agg(t.table_name::text || ':' || t.colocation_id::text, ',' ORDER BY t.table_name::text)
	      FROM citus_tables t WHERE t.table_name::text LIKE 'pays%'}),
	join(',', map { "$_:" . q1(q{SELECT colocation_id FROM citus_tables WHERE table_name = 'pays'::regclass}) }
		qw(pays pays_audit pays_blocked pays_failures pays_keys)),
	'four failures tables, co-located with the inbox');
is(sqlstate_of(q{SELECT inbox.distribute_failures('pays')}), '42P07', 'not twice');
q1(q{SELECT inbox.set_max_attempts('pays', 3)});
like(
	$workers[1]->safe_psql('postgres',
		q{SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conname = 'idempotent_inbox_failures'}),
	qr/^CHECK \(+3 IS NOT NULL\) AND \(false IS NOT NULL\)+ NOT VALID$/,
	'set_max_attempts reaches the workers in the marker');

# ---------------------------------------------------------------------------
# 2. One message's attempts, through the coordinator and delegated, in one row.
# ---------------------------------------------------------------------------

$c->safe_psql(
	'postgres', q{
CREATE FUNCTION fail(acct bigint, mid text, err text, k text DEFAULT NULL) RETURNS text
LANGUAGE plpgsql AS $$
BEGIN RETURN (SELECT f.status || ':' || f.attempts FROM inbox.record_failure_sharded('pays', acct, mid, err, k) f); END $$;
SELECT create_distributed_function('fail(bigint,text,text,text)', '$1', colocate_with := 'pays');
CREATE FUNCTION in_order(acct bigint, mid text, k text, timeout text DEFAULT '0') RETURNS text
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM set_config('lock_timeout', timeout, true);
    RETURN inbox.claim_in_order_sharded('pays', acct, mid, k);
END $$;
SELECT create_distributed_function('in_order(bigint,text,text,text)', '$1', colocate_with := 'pays');
CREATE FUNCTION verb(v text, acct bigint, mid text) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
    RETURN CASE v WHEN 'retry' THEN inbox.retry_sharded('pays', acct, mid, 'delegated')
                  WHEN 'discard' THEN inbox.discard_sharded('pays', acct, mid, 'delegated')
                  ELSE inbox.forget_sharded('pays', acct, mid, 'delegated') END;
END $$;
SELECT create_distributed_function('verb(text,bigint,text)', '$2', colocate_with := 'pays');
-- A consumer: the effect and its claim, and on a poisoned payment (a negative
-- amount) the failure, recorded once the attempt's subtransaction rolled back.
CREATE FUNCTION deliver(acct bigint, mid text, amount bigint) RETURNS text LANGUAGE plpgsql AS $$
DECLARE st text;
BEGIN
    BEGIN
        st := inbox.claim_apply_sharded('pays', acct, mid,
            'UPDATE accounts SET balance = balance + $1 WHERE account = $2', amount, acct);
        IF st = 'applied' AND amount < 0 THEN
            RAISE EXCEPTION 'payment % of account % is poisoned', mid, acct;
        END IF;
        RETURN st;
    EXCEPTION WHEN raise_exception THEN
        RETURN (SELECT f.status FROM inbox.record_failure_sharded('pays', acct, mid, SQLERRM) f);
    END;
END $$;
CREATE FUNCTION deliver_routed(acct bigint, mid text, amount bigint) RETURNS text
LANGUAGE sql AS $$ SELECT deliver(acct, mid, amount) || '' $$;
SELECT create_distributed_function('deliver(bigint,text,bigint)', '$1', colocate_with := 'pays');
});

is(q1(q{SELECT fail(5, 'p1', 'e1')}), 'retry:1', 'delegated: the first attempt');
is( q1(q{SELECT status || ':' || attempts FROM inbox.record_failure_sharded('pays', 5, 'p1', 'e2')}),
	'retry:2', 'through the coordinator: the same row');
is(q1(q{SELECT fail(5, 'p1', 'e3')}), 'quarantined:3', 'delegated: quarantined at max_attempts');
is(q1(q{SELECT fail(6, 'p1', 'e1')}), 'retry:1', 'another shard key, the same id: its own count');
is( q1(q{SELECT inbox.claim_apply_sharded('pays', 5, 'p1', 'SELECT 1') || ',' || inbox.try_claim_sharded('pays', 5, 'p1')}),
	'quarantined,quarantined', 'the claims answer quarantined');
is(q1(q{SELECT deliver(5, 'p1', 7)}), 'quarantined', 'and so does a delegated one');
is(q1(q{SELECT claimed_at FROM pays WHERE account = 5 AND message_id = 'p1'}), 'infinity',
	'held by its quarantine claim');
is(q1(q{SELECT verb('retry', 5, 'p1')}), 't', 'retry, delegated');
is(q1(q{SELECT count(*) FROM pays_failures WHERE shard_key = 5}), '0', 'its attempts are forgotten');
is(q1(q{SELECT deliver(5, 'p1', 7)}), 'applied', 'the next delivery runs');
is(q1(q{SELECT balance FROM accounts WHERE account = 5}), '7', 'and applies its effect');
is( q1(q{SELECT inbox.discard_sharded('pays', 6, 'p1', 'by hand') || ','
	      || inbox.forget_sharded('pays', 6, 'p1', 'again')}),
	'true,true', 'discard and forget through the coordinator');
is( q1(q{SELECT string_agg(shard_key || ' ' || message_id || ' ' || verb || ' ' || coalesce(attempts, 0), ',' ORDER BY done_at)
	      FROM pays_audit}),
	'5 p1 retry 3,6 p1 discard 1,6 p1 forget 0', 'every verb has its audit row');

# ---------------------------------------------------------------------------
# 3. The order of a key, and its lock met by a coordinator and a delegated call.
# ---------------------------------------------------------------------------

is(sqlstate_of(q{SELECT in_order(9, 'o1', 'k')}), '55000', 'key ordering is off');
q1(q{SELECT inbox.set_key_ordering('pays', true)});
is(q1(q{SELECT fail(9, 'o1', 'e1', 'k')}), 'retry:1', 'the first message of a key fails');
is(q1(q{SELECT in_order(9, 'o2', 'k')}), 'blocked', 'delegated: the next one waits behind it');
is(q1(q{SELECT inbox.claim_in_order_sharded('pays', 9, 'o3', 'k')}), 'blocked',
	'through the coordinator too');
is( q1(q{SELECT string_agg(message_id || ' ' || blocked_by || ' ' || deliveries, ',' ORDER BY first_blocked_at) FROM pays_blocked}),
	'o2 o1 1,o3 o1 1', 'the blocked list, in order');
is(q1(q{SELECT in_order(9, 'o1', 'k')}), 'claimed', 'the failing message itself may run');
is(q1(q{SELECT in_order(9, 'o2', 'k') || ',' || in_order(9, 'o3', 'k')}), 'claimed,claimed',
	'once it is applied, the key moves on');
is(q1(q{SELECT (SELECT count(*) FROM pays_blocked) + (SELECT count(*) FROM pays_failures WHERE shard_key = 9)}),
	'0', 'nothing left of the key');

my $holder = $c->background_psql('postgres');
$holder->query_safe(q{BEGIN; SELECT inbox.claim_in_order_sharded('pays', 9, 'o4', 'k')});
is(sqlstate_of(q{SELECT in_order(9, 'o5', 'k', '300ms')}), '55P03',
	'a delegated claim of the key waits for a coordinator transaction that holds it');
is(q1(q{SELECT in_order(9, 'o6', 'other', '300ms')}), 'claimed', 'another key does not wait');
$holder->query_safe('COMMIT');
$holder->quit;
is(q1(q{SELECT in_order(9, 'o5', 'k', '300ms')}), 'claimed', 'after its commit, it runs');

# ---------------------------------------------------------------------------
# 4. A failures table altered by its owner is refused before anything is written.
# ---------------------------------------------------------------------------

q1(q{ALTER TABLE pays_failures DROP CONSTRAINT idempotent_inbox_failures});
(undef, undef, $err) = $c->psql('postgres', q{SELECT fail(10, 'x', 'e')});
like($err, qr/table "pays_failures" is not a failures table of inbox "pays".*idempotent_inbox_failures/s,
	'a failures table without its marker is refused');
q1(q{SELECT inbox.set_key_ordering('pays', true)});
is(q1(q{SELECT fail(10, 'x', 'e')}), 'retry:1', 'set_key_ordering writes the marker again');

# ---------------------------------------------------------------------------
# 5. The views on the coordinator show a Citus inbox's rows, to those who may read it.
# ---------------------------------------------------------------------------

q1(q{SELECT fail(11, 'v1', 'e', 'kv') FROM generate_series(1, 3)});
q1(q{SELECT in_order(11, 'v2', 'kv')});
is( q1(q{SELECT string_agg(message_id || ' ' || shard_key || ' ' || state || ' ' || position, ',' ORDER BY position)
	      FROM inbox.quarantine WHERE inbox = 'pays'::regclass}),
	'v1 11 quarantined 1,v2 11 blocked 2', 'inbox.quarantine: the key in order, from the workers');
is( q1(q{SELECT quarantined || ',' || blocked || ',' || retried || ',' || discarded || ',' || forgotten
	      FROM inbox.stats WHERE inbox = 'pays'::regclass}),
	'1,1,1,1,1', 'inbox.stats counts them');
is( q1(q{SELECT string_agg(verb, ',' ORDER BY done_at) FROM inbox.audit WHERE inbox = 'pays'::regclass}),
	'retry,discard,forget', 'inbox.audit shows the verbs');
q1(q{CREATE ROLE reader; CREATE ROLE stranger; GRANT SELECT ON pays TO reader});
is( q1(q{SET ROLE reader; SELECT count(*) FROM inbox.quarantine; RESET ROLE;
	      SET ROLE stranger; SELECT count(*) FROM inbox.quarantine}),
	"3\n0", 'a reader of the inbox sees its rows (x of account 10 still fails), a stranger none');
is( q1(q{SET ROLE stranger; SELECT coalesce(quarantined, -1) FROM inbox.stats WHERE inbox = 'pays'::regclass}),
	'-1', 'inbox.stats answers a stranger, without the counts');
q1(q{SELECT inbox.forget_sharded('pays', 11, 'v1'), inbox.forget_sharded('pays', 11, 'v2')});

# ---------------------------------------------------------------------------
# 6. Faults under load: per account, payments a of 1 and b of 10, and x of -1, which
#    fails every time; delivered by psql scripts through the coordinator, half
#    delegated, half routed.  A delivery is acknowledged unless it answered retry.
# ---------------------------------------------------------------------------

sub messages_of
{
	my ($first, $last) = @_;
	return map { my $a = $_; ([ $a, 'a', 1 ], [ $a, 'b', 10 ], [ $a, 'x', -1 ]) } $first .. $last;
}

my $deliveries = Deliveries->new(
	node  => $c,
	name  => 'failures',
	label => sub { join ' ', @{ $_[0] }[ 0 .. 1 ] },
	sql   => sub {
		my ($m, $i) = @_;
		return 'SELECT deliver' . ($i % 2 ? '_routed' : '') . "($m->[0], '$m->[1]', $m->[2])";
	},
	acked => sub { $_[1] ne 'retry' });

sub check_accounts
{
	my ($first, $last, $what) = @_;
	my $n = $last - $first + 1;
	is( q1("SELECT count(*) FILTER (WHERE balance = 11) || ',' || count(*)
	          FROM accounts WHERE account BETWEEN $first AND $last"),
		"$n,$n", "$what: every good payment applied once, no poisoned one");
	is( q1("SELECT count(*) FILTER (WHERE message_id = 'x' AND attempts = 3 AND quarantined_at IS NOT NULL)
	               || ',' || count(*)
	          FROM pays_failures WHERE shard_key BETWEEN $first AND $last"),
		"$n,$n", "$what: every poisoned payment quarantined after exactly 3 failures");
	is( q1("SELECT count(*) FROM pays WHERE account BETWEEN $first AND $last AND claimed_at = 'infinity'"),
		$n, "$what: each held by its quarantine claim");
}

q1(q{INSERT INTO accounts SELECT a FROM generate_series(100, 1400) a});
Deliveries::faults(
	deliveries  => $deliveries,
	coordinator => $c,
	workers     => \@workers,
	messages    => \&messages_of,
	check       => \&check_accounts,
	killed      => [ 100, 249 ],
	started     => q{SELECT count(*) > 20 FROM pays WHERE account >= 100},
	table       => 'pays');
is( q1(q{SELECT bool_and(fp.nodeport = pp.nodeport) || ',' || count(*)
	      FROM pg_dist_shard fs
	      JOIN pg_dist_shard ps ON ps.shardminvalue = fs.shardminvalue
	      JOIN citus_shards fp ON fp.shardid = fs.shardid
	      JOIN citus_shards pp ON pp.shardid = ps.shardid
	     WHERE fs.logicalrelid = 'pays_failures'::regclass AND ps.logicalrelid = 'pays'::regclass}),
	'true,4', 'after the moves, every failures shard is on the node of its inbox shard');

q1(q{SELECT inbox.drop_inbox('pays')});
is(q1(q{SELECT count(*) FROM pg_class WHERE relname LIKE 'pays%' AND relkind = 'r'}), '0',
	'drop_inbox drops the failures tables with the inbox');

$_->stop for ($coordinator, @workers);
done_testing();
