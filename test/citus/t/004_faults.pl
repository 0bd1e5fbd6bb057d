# Real faults on a real Citus cluster (a coordinator and two workers), against a
# sharded inbox co-located with the accounts it guards.  A consumer claims a
# message and credits its account in one transaction on the one worker that
# holds both shards, so no fault may apply a message twice or lose one that was
# acknowledged:
#
#  1. Redeliveries across nodes: every message arrives two or three times, in a
#     shuffled order, sent to the coordinator or to either worker, as a call of
#     the delegated consumer function or as claim_apply_sharded called on that
#     node (not delegated); exactly one delivery applies each message.
#  2. kill -9 of a worker mid-run, with a claim in an open transaction and two
#     calls blocked on the worker at that moment; restart it; redeliver every
#     message that was not acknowledged, then replay them all.
#  3. A shard move (logical replication) while consumers run, with a claim
#     committed while the move is under way; afterwards every message claimed
#     before the move is a duplicate, wherever it is redelivered.
#
# Acknowledged means: the consume call returned an outcome and its transaction
# committed.  A broker redelivers everything else, so every check below ends with
# the balances a single application of each message gives.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/..";
use CitusCluster;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);

my ($coordinator, @workers) = CitusCluster::start(workers => 2);
my $c = $coordinator;

# Four shards per table (two per worker) are enough to span both workers and
# keep the move small.  Accounts 1..8 are bigint ids, as the inbox's shard key.
$c->safe_psql(
	'postgres', q{
CREATE EXTENSION idempotent_inbox;
CREATE TABLE accounts (id bigint PRIMARY KEY, balance bigint NOT NULL);
SELECT create_distributed_table('accounts', 'id', shard_count => 4);
INSERT INTO accounts SELECT i, 0 FROM generate_series(1, 8) i;
SELECT inbox.create_sharded_inbox('payments_inbox', 'account_id', 'bigint');
SELECT create_distributed_table('payments_inbox', 'account_id', colocate_with => 'accounts');
-- PL/pgSQL, so that the call is not inlined and Citus has a call to delegate.
CREATE FUNCTION consume(acct bigint, mid text, amount bigint) RETURNS inbox.outcome
LANGUAGE plpgsql AS $$
BEGIN
    RETURN inbox.claim_apply_sharded('payments_inbox', acct, mid,
        'UPDATE accounts SET balance = balance + $1 WHERE id = $2', amount, acct);
END $$;
SELECT create_distributed_function('consume(bigint,text,bigint)', '$1',
                                   colocate_with := 'accounts');
});
my $inbox = 'payments_inbox';

# The SQL of one delivery.  'delegated' is the bare call Citus pushes to the
# worker that holds the account's shards; 'direct' runs claim_apply_sharded on
# the node it is sent to, whose statements Citus routes to that worker.
sub delivery_sql
{
	my ($route, $msg) = @_;
	my ($id, $acct, $amount) = @$msg;
	return "SELECT consume($acct, '$id', $amount)" if $route eq 'delegated';
	return "SELECT inbox.claim_apply_sharded('payments_inbox', $acct, '$id', "
	  . "'UPDATE accounts SET balance = balance + \$1 WHERE id = \$2', $amount, $acct)";
}

# Messages: [id, account, amount].  Amounts differ per message so that a message
# applied twice, or one lost, shows in its account's balance.
sub messages
{
	my ($prefix, $count) = @_;
	return map { [ "$prefix$_", 1 + ($_ * 5) % 8, 100 + $_ ] } 1 .. $count;
}

# The balances that applying each message once gives, added to the current ones:
# "id:balance" for accounts 1..8.
my %expected = map { $_ => 0 } 1 .. 8;
sub expect_applied { $expected{ $_->[1] } += $_->[2] foreach @_; }
sub expected_balances
{
	return join ',', map { "$_:$expected{$_}" } 1 .. 8;
}
sub balances
{
	return $c->safe_psql('postgres',
		q{SELECT string_agg(id || ':' || balance, ',' ORDER BY id) FROM accounts});
}

# The claims in the inbox for message ids with this prefix, "id" sorted.
sub claims
{
	my ($prefix) = @_;
	return $c->safe_psql('postgres',
		"SELECT count(*) || '|' || string_agg(message_id, ',' ORDER BY message_id) "
		  . "FROM $inbox WHERE message_id LIKE '$prefix%'");
}
sub claims_of
{
	my @ids = sort map { $_->[0] } @_;
	return scalar(@ids) . '|' . join(',', @ids);
}

# One delivery in a background session: the outcome, or undef when the call
# failed (the consumer does not acknowledge, the broker redelivers).
sub deliver
{
	my ($session, $kind, $msg, $route) = @_;
	$session->{stderr} = '';
	my ($out, $failed) = $session->query(delivery_sql($kind, $msg));
	note "$msg->[0] via " . ($route // $kind) . ': ' . ($failed ? "error $session->{stderr}" : $out);
	return $failed ? undef : $out;
}

# A script of deliveries for psql to run unattended: each is preceded by an
# \echo of its id, so the outcomes can be matched to messages afterwards
# (parse_script_output); a failed call prints nothing on stdout.
sub script_of
{
	my (@deliveries) = @_;    # [route, msg]
	return join '',
	  map { "\\echo '#$_->[1][0]'\n" . delivery_sql(@$_) . ";\n" } @deliveries;
}
sub parse_script_output
{
	my ($stdout) = @_;
	my (@outcomes, $id);
	foreach my $line (split /\n/, $stdout)
	{
		if ($line =~ /^#(.*)$/) { $id = $1; }
		elsif (defined $id) { push @outcomes, [ $id, $line ]; undef $id; }
	}
	return @outcomes;    # [id, outcome] for the calls that returned
}

# Which worker holds the shards of an account, and the shard group's accounts shard.
sub worker_of
{
	my ($acct) = @_;
	my $port = $c->safe_psql('postgres',
		"SELECT nodeport FROM citus_shards WHERE shardid = "
		  . "get_shard_id_for_distribution_column('accounts', $acct)");
	my ($w) = grep { $_->port == $port } @workers;
	return $w;
}

is( $c->safe_psql('postgres',
		q{SELECT count(DISTINCT nodeport) FROM citus_shards
		   WHERE table_name = 'accounts'::regclass}),
	'2', 'the accounts are spread over both workers');

# ---------------------------------------------------------------------------
# 1. Redeliveries across nodes.
# ---------------------------------------------------------------------------

# A route is the node a delivery is sent to and the kind of call.  On a worker,
# Citus runs the delegated call locally or forwards it to the other worker, and a
# direct call's statements are routed from there.
my @routes = map { my $n = $_; map { "$n $_" } qw(delegated direct) } qw(coordinator worker1 worker2);
my %session = (
	coordinator => $c->background_psql('postgres', on_error_stop => 0),
	worker1 => $workers[0]->background_psql('postgres', on_error_stop => 0),
	worker2 => $workers[1]->background_psql('postgres', on_error_stop => 0));
sub session_of { return $session{ (split / /, $_[0])[0] }; }
sub route_sql { return (split / /, $_[0])[1]; }

my @p = messages('p', 24);
my (@deliveries, %times);    # [order key, route, msg]; id => deliveries
foreach my $m (@p)
{
	my ($n) = $m->[0] =~ /(\d+)/;
	$times{ $m->[0] } = $n % 3 == 0 ? 3 : 2;
	# The order key shuffles deliveries deterministically across messages.
	push @deliveries, [ ($n * 7919 + $_ * 104729) % 1009, $routes[ ($n + $_) % @routes ], $m ]
	  foreach 1 .. $times{ $m->[0] };
}
my %outcomes;    # id => [outcomes in delivery order]
foreach my $d (sort { $a->[0] <=> $b->[0] } @deliveries)
{
	my (undef, $route, $m) = @$d;
	push @{ $outcomes{ $m->[0] } },
	  deliver(session_of($route), route_sql($route), $m, $route) // 'error';
}
expect_applied(@p);
is( join(' ', map { "$_->[0]:" . join(',', @{ $outcomes{ $_->[0] } }) } @p),
	join(' ',
		map { "$_->[0]:applied" . (',duplicate' x ($times{ $_->[0] } - 1)) } @p),
	'each message: the first delivery applies, every redelivery is a duplicate, on any route');
is(balances(), expected_balances(), 'balances: every message applied once');
is(claims('p'), claims_of(@p), 'the inbox holds one claim per message');


# What Citus sends to the workers for one call: its remote-command log lines as
# "port: command", in order.
sub remote_commands
{
	my ($node, $sql) = @_;
	my ($stdout, $stderr);
	$node->psql('postgres',
		"SET citus.log_remote_commands = on; SET client_min_messages = log; $sql",
		stdout => \$stdout, stderr => \$stderr, on_error_stop => 1);
	my @commands;
	while ($stderr =~ /issuing (.*?)\n.*?on server \S+?:(\d+) /sg)
	{
		push @commands, "$2: $1";
	}
	note "remote commands for $sql:\n" . join("\n", @commands);
	return @commands;
}

# The delegated call is one remote command, the function call itself, on the
# worker that holds the account; nothing is prepared (no two-phase commit).
my @p_more = messages('px', 2);
my @sent = remote_commands($c, delivery_sql('delegated', $p_more[0]));
is(scalar(@sent), 1, 'a delegated delivery sends one command');
like($sent[0], qr/^@{[ worker_of($p_more[0][1])->port ]}: SELECT .*consume\(/,
	'that command is the consumer call, on the worker that holds the account');
# The direct call's statements all go to that one worker, which commits without
# PREPARE TRANSACTION.
@sent = remote_commands($c, delivery_sql('direct', $p_more[1]));
my $port = worker_of($p_more[1][1])->port;
is(join(',', grep { !/^$port: / } @sent), '', 'a direct delivery talks only to the account\'s worker');
is(join(',', grep { /PREPARE|COMMIT PREPARED/ } @sent), '', 'and commits without two-phase commit');
expect_applied(@p_more);
is(balances(), expected_balances(), 'those two deliveries applied once more');

$_->quit foreach values %session;

# ---------------------------------------------------------------------------
# 2. kill -9 of a worker mid-run.
# ---------------------------------------------------------------------------

# A statement sent to a background session without waiting for it, and its
# result collected later (BackgroundPsql's query() waits).
sub send_query
{
	my ($session, $sql) = @_;
	$session->{stdout} = $session->{stderr} = '';
	$session->{timeout}->start;
	$session->{stdin} .= "$sql;\n\\echo '#done'\n\\warn '#done'\n";
	$session->{run}->pump_nb;
}
sub await_query
{
	my ($session) = @_;
	$session->{run}->pump
	  until ($session->{stdout} =~ /#done\n/ && $session->{stderr} =~ /#done\n/)
	  || $session->{timeout}->is_expired;
	die 'background query timed out' if $session->{timeout}->is_expired;
	$session->{stdout} =~ s/\n?#done\n//;
	$session->{stderr} =~ s/\n?#done\n//;
	note "awaited: stdout $session->{stdout}, stderr $session->{stderr}";
	return ($session->{stdout}, $session->{stderr});
}

my $victim = worker_of(1);
my ($survivor) = grep { $_ != $victim } @workers;
my @victim_accounts = grep { worker_of($_) == $victim } 1 .. 8;
my %on_victim = map { $_ => 1 } @victim_accounts;
note 'the victim holds accounts ' . join(',', @victim_accounts);

my @before = messages('kb', 8);     # acknowledged before the kill
my @outage = messages('ko', 8);     # delivered while the worker is down
my @after = messages('ka', 8);      # by the same consumer after the restart
my @unattended = messages('ku', 40);    # a script that runs across the kill
my $open = [ 'k-open', $victim_accounts[0], 1001 ];          # committed after the kill
my $blocked = [ 'k-blocked', $victim_accounts[1], 1002 ];    # running on the worker
my @k = (@before, @outage, @after, @unattended, $open, $blocked);

my %applied;    # id => how many acknowledged deliveries said 'applied'
my %acked;      # id => 1 once a delivery of it was acknowledged
sub ack
{
	my ($id, $outcome) = @_;
	return unless defined $outcome;
	$acked{$id} = 1;
	$applied{$id}++ if $outcome eq 'applied';
}

my $consumer = $c->background_psql('postgres', on_error_stop => 0);
$consumer->set_query_timer_restart;
my $i = 0;
ack($_->[0], deliver($consumer, $i++ % 2 ? 'direct' : 'delegated', $_)) foreach @before;
is(join(',', sort keys %acked), join(',', sort map { $_->[0] } @before),
	'before the kill every delivery is acknowledged');

# In flight at the kill: a direct claim in an open transaction ...
my $opener = $c->background_psql('postgres', on_error_stop => 0);
$opener->set_query_timer_restart;
$opener->query_safe('BEGIN');
is($opener->query_safe(delivery_sql('direct', $open)), 'applied',
	'k-open is applied inside a transaction still open at the kill');

# ... and a delegated call running on the victim, its claim made and its credit
# waiting for the row lock another transaction holds on the account.
my $locker = $c->background_psql('postgres', on_error_stop => 0);
$locker->query_safe('BEGIN');
$locker->query_safe("SELECT balance FROM accounts WHERE id = $blocked->[1] FOR UPDATE");
my $waiter = $c->background_psql('postgres', on_error_stop => 0);
send_query($waiter, delivery_sql('delegated', $blocked));
$victim->poll_query_until('postgres',
	q{SELECT count(*) FROM pg_stat_activity
	   WHERE wait_event_type = 'Lock' AND query LIKE '%consume(%'}, '1')
  or die 'the delegated call never blocked on the victim';

# ... and a script of deliveries to all accounts, running unattended.  It runs
# until its first delivery to an account whose row one of those transactions
# holds, which then waits on the victim too; the rest of it runs after the kill.
# (psql flushes its output after each result: wait for the outcome before.)
my ($stall) = grep { $unattended[$_][1] == $open->[1] || $unattended[$_][1] == $blocked->[1] }
  0 .. $#unattended;
die 'the script would stall at once' unless $stall > 0;
my $script = $c->background_psql('postgres', on_error_stop => 0);
$i = 0;
$script->{stdin} .=
  script_of(map { [ $i++ % 2 ? 'direct' : 'delegated', $_ ] } @unattended) . "\\q\n";
my $last_free = $unattended[ $stall - 1 ][0];
$script->{run}->pump until $script->{stdout} =~ /^#$last_free\n\w+\n/m;
$victim->poll_query_until('postgres',
	q{SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'}, '2')
  or die 'the script never blocked on the victim';

# The processes of the victim, to wait for once its postmaster is killed: an
# orphaned backend goes on until it notices, and would commit what it is sent.
my @victim_pids = (
	split(/\n/, $victim->safe_psql('postgres', 'SELECT pid FROM pg_stat_activity')),
	(split /\n/, slurp_file($victim->data_dir . '/postmaster.pid'))[0]);
$victim->kill9;
for (1 .. 10 * $PostgreSQL::Test::Utils::timeout_default)
{
	last unless grep { kill 0, $_ } @victim_pids;
	usleep(100_000);
}
is(join(',', grep { kill 0, $_ } @victim_pids), '', 'every process of the victim is gone');

# Everything in flight on the victim is gone; nothing of it may be acknowledged.
$opener->{stderr} = '';
my ($out, $failed) = $opener->query('COMMIT');
note "COMMIT of k-open after the kill: stdout $out, stderr $opener->{stderr}";
# (Citus warns that the commit failed on the worker, then raises an error: one
# node in the transaction, no two-phase commit, so nothing is left to recover.)
like($opener->{stderr}, qr/ERROR:  could not commit transaction/,
	'the COMMIT of the open transaction fails: k-open is not acknowledged');
my (undef, $waiter_err) = await_query($waiter);
like($waiter_err, qr/ERROR:  connection to the remote node/,
	'the blocked delegated call fails: k-blocked is not acknowledged');
ack($blocked->[0], undef);

$script->{run}->finish;
ack(@$_) foreach parse_script_output($script->{stdout});
note 'unattended script acknowledged ' . scalar(parse_script_output($script->{stdout}))
  . ' of ' . scalar(@unattended) . "; stderr:\n$script->{stderr}";

# While the victim is down the survivor's accounts go on: each delivery touches
# one worker only.
my @outage_outcomes;
$i = 0;
foreach my $m (@outage)
{
	my $o = deliver($consumer, $i++ % 2 ? 'direct' : 'delegated', $m);
	ack($m->[0], $o);
	push @outage_outcomes, "$m->[0]:" . ($o // 'error');
}
is(join(' ', @outage_outcomes),
	join(' ', map { "$_->[0]:" . ($on_victim{ $_->[1] } ? 'error' : 'applied') } @outage),
	'during the outage the survivor\'s accounts are served, the victim\'s fail');

CitusCluster::restart_killed($victim);
$c->poll_query_until('postgres', 'SELECT count(*) FROM accounts', '8')
  or die 'the coordinator does not reach the restarted worker';
is($victim->safe_psql('postgres', 'SELECT count(*) FROM pg_prepared_xacts'),
	'0', 'the restarted worker has no prepared transaction to resolve');

# The same consumer session goes on after the restart.
my @after_outcomes;
$i = 0;
foreach my $m (@after)
{
	my $o = deliver($consumer, $i++ % 2 ? 'direct' : 'delegated', $m);
	ack($m->[0], $o);
	push @after_outcomes, "$m->[0]:" . ($o // 'error');
}
is(join(' ', @after_outcomes), join(' ', map { "$_->[0]:applied" } @after),
	'after the restart the consumer\'s session delivers to every account again');

# The broker redelivers every message not acknowledged, on alternating routes.
my @redelivered;
$i = 0;
foreach my $m (grep { !$acked{ $_->[0] } } @k)
{
	my $o = deliver($consumer, $i++ % 2 ? 'direct' : 'delegated', $m);
	ack($m->[0], $o);
	push @redelivered, "$m->[0]:" . ($o // 'error');
}
note 'redelivered: ' . join(' ', @redelivered);
is(join(' ', grep { /:error$/ } @redelivered), '', 'every redelivery returns an outcome');
like(join(' ', @redelivered), qr/(^| )k-open:applied( |$)/,
	'k-open, committed after the kill, was lost with the worker: applied on redelivery');
like(join(' ', @redelivered), qr/(^| )k-blocked:applied( |$)/,
	'k-blocked, running at the kill, was lost with the worker: applied on redelivery');

# Then a replay of everything: all duplicates.
my @replayed;
$i = 0;
foreach my $m (@k)
{
	my $o = deliver($consumer, $i++ % 2 ? 'delegated' : 'direct', $m);
	push @replayed, "$m->[0]:" . ($o // 'error');
}
is(join(' ', @replayed), join(' ', map { "$_->[0]:duplicate" } @k),
	'a replay of every message after the restart: all duplicates');
is(join(',', grep { ($applied{$_} // 0) > 1 } sort keys %applied), '',
	'no message was acknowledged as applied twice');
expect_applied(@k);
is(balances(), expected_balances(), 'balances after the kill: every message applied once');
is(claims('k'), claims_of(@k), 'the inbox holds one claim per message');
$_->quit foreach ($consumer, $opener, $locker, $waiter);

# ---------------------------------------------------------------------------
# 3. A shard move while consumers run.
# ---------------------------------------------------------------------------

# The shard group of account 1 (its accounts shard and the inbox shard beside it)
# moves from the worker that holds it to the other one.
my $moving = 1;
sub shard_of
{
	my ($table) = @_;
	return split /\|/, $c->safe_psql('postgres',
		"SELECT shardid, nodeport, shard_name FROM citus_shards WHERE shardid = "
		  . "get_shard_id_for_distribution_column('$table', $moving)");
}
my ($shard, $src_port) = shard_of('accounts');
my ($src) = grep { $_->port == $src_port } @workers;
my ($dst) = grep { $_ != $src } @workers;
my @moved_accounts = grep {
	$c->safe_psql('postgres',
		"SELECT get_shard_id_for_distribution_column('accounts', $_)") == $shard
} 1 .. 8;
note "moving shard $shard (accounts @moved_accounts) from port $src_port to " . $dst->port;

# Claimed and acknowledged before the move.
my @s_before = messages('sb', 12);
$consumer = $c->background_psql('postgres', on_error_stop => 0);
$i = 0;
my @before_outcomes =
  map { deliver($consumer, $i++ % 2 ? 'direct' : 'delegated', $_) // 'error' } @s_before;
is(join(',', @before_outcomes), join(',', ('applied') x @s_before),
	'before the move every message is applied');

# A claim on the moving shard in a transaction that stays open: the move's
# replication slot on the source waits for it, so the move is known to be under
# way, and the claim commits while it is.
my $s_open = [ 's-open', $moving, 2001 ];
$opener = $c->background_psql('postgres', on_error_stop => 0);
$opener->query_safe('BEGIN');
is($opener->query_safe(delivery_sql('direct', $s_open)), 'applied',
	's-open is applied inside a transaction open when the move starts');

my $mover = $c->background_psql('postgres', on_error_stop => 0);
$mover->set_query_timer_restart;
send_query($mover,
	sprintf("SELECT citus_move_shard_placement(%d, '%s', %d, '%s', %d, "
		  . "shard_transfer_mode => 'force_logical')",
		$shard, $src->host, $src->port, $dst->host, $dst->port));
$src->poll_query_until('postgres',
	q{SELECT count(*) FROM pg_stat_activity
	   WHERE backend_type = 'walsender' AND wait_event = 'transactionid'}, '1')
  or die 'the move did not start';

# Two consumers deliver in a loop until the move is over: one through the
# coordinator (delegated and direct calls), one through the source worker, which
# must send its delegated calls for the moved accounts on to the destination once
# they have moved.  The second redelivers what the first delivers, so the same
# message often arrives on two nodes at once, and the first redelivers a message
# claimed before the move each round.
my %consumers = (
	coordinator => $c->background_psql('postgres', on_error_stop => 0),
	source => $src->background_psql('postgres', on_error_stop => 0));
$_->set_query_timer_restart foreach values %consumers;
my (@s_run, $round);
# What every node is waiting for, should a consumer hang.
sub dump_activity
{
	foreach my $node ($c, @workers)
	{
		diag $node->name . ":\n"
		  . $node->safe_psql('postgres',
			q{SELECT pid, backend_type, wait_event_type, wait_event, pg_blocking_pids(pid),
			         left(query, 150)
			    FROM pg_stat_activity
			   WHERE state IS DISTINCT FROM 'idle' AND pid <> pg_backend_pid()
			     AND backend_type IN ('client backend', 'walsender')});
	}
}
sub mover_done
{
	$mover->{run}->pump_nb;
	return $mover->{stdout} =~ /#done\n/ && $mover->{stderr} =~ /#done\n/;
}
sub round_of_deliveries
{
	$round++;
	# Accounts 2..8: account 1's row stays locked by s-open's transaction for
	# the first rounds.  The moving shard holds some of them.
	my @batch = map { [ "sr$_", 2 + ($_ * 5) % 7, 300 + $_ ] } 4 * $round - 3 .. 4 * $round;
	push @s_run, @batch;
	my $j = 0;
	$consumers{coordinator}{stdin} .=
	  script_of((map { [ $j++ % 2 ? 'direct' : 'delegated', $_ ] } @batch),
		[ 'delegated', $s_before[ $round % @s_before ] ])
	  . "\\echo '#round$round'\n";
	$consumers{source}{stdin} .=
	  script_of(map { [ 'delegated', $_ ] } reverse @batch) . "\\echo '#round$round'\n";
	foreach my $session (values %consumers)
	{
		$session->{run}->pump
		  until $session->{stdout} =~ /#round$round\n/ || $session->{timeout}->is_expired;
		if ($session->{timeout}->is_expired)
		{
			dump_activity();
			die "a consumer timed out; stdout: $session->{stdout}, stderr: $session->{stderr}";
		}
	}
}
round_of_deliveries() foreach 1 .. 2;    # while the move waits for s-open
$opener->query_safe('COMMIT');
ack($s_open->[0], 'applied');
until (mover_done())
{
	die 'the move does not end' if $round > 2000;
	round_of_deliveries();
}
my (undef, $move_err) = await_query($mover);
unlike($move_err, qr/ERROR/, 'the move succeeds while consumers deliver');
note "consumers delivered $round rounds during the move; their errors:\n"
  . join('', map { $_->{stderr} } values %consumers);

# Every call that returned an outcome is acknowledged; the rest are redelivered.
%applied = ();
%acked = ();
ack(@$_) foreach map { parse_script_output($_->{stdout}) } values %consumers;
ack($_->[0], 'applied') foreach @s_before;
ack($s_open->[0], 'applied');

is(join(',', map { (shard_of($_))[1] } 'accounts', $inbox),
	join(',', $dst->port, $dst->port),
	'the accounts shard and its inbox shard now live on the destination');
my (undef, undef, $inbox_shard) = shard_of($inbox);
is( $dst->safe_psql('postgres', "SELECT count(*) FROM $inbox_shard"),
	$c->safe_psql('postgres',
		"SELECT count(*) FROM $inbox WHERE account_id IN (@{[ join ',', @moved_accounts ]})"),
	'the destination\'s inbox shard holds every claim of the moved accounts');

# Redeliveries of every message claimed before the move, on every route: all
# duplicates, the moved accounts' included.
my @claimed_before = (@s_before, $s_open);
%session = (
	coordinator => $consumer,
	worker1 => $workers[0]->background_psql('postgres', on_error_stop => 0),
	worker2 => $workers[1]->background_psql('postgres', on_error_stop => 0));
my @after_move;
foreach my $route (@routes)
{
	push @after_move,
	  map { "$_->[0]:" . (deliver(session_of($route), route_sql($route), $_, $route) // 'error') }
	  @claimed_before;
}
is(join(' ', @after_move),
	join(' ', map { "$_->[0]:duplicate" } (@claimed_before) x @routes),
	'after the move every message claimed before it is a duplicate, on every route');

# The broker redelivers what was not acknowledged, then everything is replayed.
my @s = (@claimed_before, @s_run);
my @redelivered_s =
  map { "$_->[0]:" . (deliver($consumer, 'delegated', $_) // 'error') }
  grep { !$acked{ $_->[0] } } @s;
note 'redelivered after the move: ' . join(' ', @redelivered_s);
is(join(' ', grep { /:error$/ } @redelivered_s), '', 'every redelivery after the move returns an outcome');
ack(split /:/) foreach @redelivered_s;
$i = 0;
is( join(' ',
		map { "$_->[0]:" . (deliver($consumer, $i++ % 2 ? 'direct' : 'delegated', $_) // 'error') } @s),
	join(' ', map { "$_->[0]:duplicate" } @s),
	'a replay of every message after the move: all duplicates');
is(join(',', grep { ($applied{$_} // 0) > 1 } sort keys %applied), '',
	'no message was acknowledged as applied twice during the move');
expect_applied(@s);
is(balances(), expected_balances(), 'balances after the move: every message applied once');
is(claims('s'), claims_of(@s), 'the inbox holds one claim per message');

$_->quit foreach (values %session, values %consumers, $opener, $mover);
$_->stop for ($coordinator, @workers);
done_testing();
