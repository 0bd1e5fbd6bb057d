
# A batch consumer crashes with claim_apply_many's work done but not committed:
# after the call returned, in the middle of its statement, and by an immediate
# shutdown of the server.  Every crash must take the batch's claims and its
# effect away together, so the redelivered poll (which overlaps the polls before
# it, as a broker's redelivery does) is applied exactly once per message.

use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('batch_crash');
$node->init;
$node->append_conf('postgresql.conf', 'restart_after_crash = on');
$node->start;

$node->safe_psql(
	'postgres', q{
CREATE EXTENSION idempotent_inbox;
SELECT inbox.create_inbox('payments');
CREATE TABLE accounts (id int PRIMARY KEY, balance bigint NOT NULL);
INSERT INTO accounts VALUES (1, 0), (2, 0), (3, 0);
CREATE TABLE ledger (message_id text, account int, amount int);
CREATE UNLOGGED TABLE crash_marker (x int);
});

# The effect of a poll: one ledger row per fresh message, and each account
# credited with the sum of its fresh messages.  $sleep lets a crash land in the
# middle of the statement, after the ledger rows are written.
sub effect
{
	my ($sleep) = @_;
	my $pause = $sleep ? ', pause AS (SELECT pg_sleep(60) FROM logged)' : '';
	my $from = $sleep ? 'pause, ' : '';
	return
	    'WITH logged AS (INSERT INTO ledger SELECT * FROM unnest($1, $2::int[], $3::int[]) RETURNING 1)'
	  . $pause
	  . ' UPDATE accounts a SET balance = a.balance + m.total FROM '
	  . $from
	  . '(SELECT account, sum(amount) AS total FROM unnest($2::int[], $3::int[]) AS u(account, amount)'
	  . ' GROUP BY account) m WHERE a.id = m.account';
}

# A poll: ids, the account and the amount of each.
sub poll_call
{
	my ($poll, $sleep) = @_;
	my $ids = join(',', map { $_->[0] } @$poll);
	my $accounts = join(',', map { $_->[1] } @$poll);
	my $amounts = join(',', map { $_->[2] } @$poll);
	my $stmt = effect($sleep);
	$stmt =~ s/'/''/g;
	return "SELECT string_agg(message_id || '=' || outcome, ',') FROM inbox.claim_apply_many("
	  . "'payments', '{$ids}', '$stmt', '{$accounts}'::int[], '{$amounts}'::int[])";
}

sub query { return $node->safe_psql('postgres', $_[0]); }

my %applied;    # message id => amount, for every message that took effect
my %account;    # account => what its balance must be

sub remember
{
	my ($poll, $outcomes) = @_;
	my %outcome = map { split /=/ } split /,/, $outcomes;
	foreach my $m (@$poll)
	{
		my ($id, $acct, $amount) = @$m;
		next if exists $applied{$id};
		$applied{$id} = $amount;
		$account{$acct} += $amount;
	}
}

# What a poll must answer: applied for the first occurrence of each id not yet
# applied, duplicate for the rest.
sub expected_outcomes
{
	my ($poll) = @_;
	my %seen = %applied;
	return join(',',
		map { my $id = $_->[0]; my $o = exists $seen{$id} ? 'duplicate' : 'applied'; $seen{$id} = 1; "$id=$o" }
		  @$poll);
}

sub deliver
{
	my ($name, $poll) = @_;
	my $want = expected_outcomes($poll);
	my $got = query(poll_call($poll, 0));
	is($got, $want, "$name: each fresh id applied once, repeats and replays duplicates");
	remember($poll, $got);
	is(query(poll_call($poll, 0)), join(',', map { "$_->[0]=duplicate" } @$poll),
		"$name: the whole poll redelivered is all duplicates");
}

sub check_state
{
	my ($name) = @_;
	is(query('SELECT count(*) FROM payments'), scalar(keys %applied), "$name: one claim per applied message");
	is( query('SELECT count(*) FROM (SELECT message_id FROM ledger GROUP BY 1 HAVING count(*) > 1) d'),
		0, "$name: no message in the ledger twice");
	is(query('SELECT count(*) FROM ledger'), scalar(keys %applied), "$name: a ledger row per applied message");
	foreach my $acct (1 .. 3)
	{
		is(query("SELECT balance FROM accounts WHERE id = $acct"), $account{$acct} // 0,
			"$name: account $acct holds the sum of its applied messages");
	}
}

# Run a poll in an open transaction, then crash: $how is 'returned' (SIGKILL
# after the call returned), 'statement' (SIGKILL while its statement sleeps)
# or 'immediate' (immediate shutdown after the call returned).
sub crash_during
{
	my ($name, $poll, $how) = @_;

	query('INSERT INTO crash_marker VALUES (1)');
	my $consumer = $node->background_psql('postgres', on_error_stop => 0);
	my $pid = $consumer->query_safe('SELECT pg_backend_pid()');
	$consumer->query_safe('BEGIN');
	if ($how eq 'statement')
	{
		# The COMMIT goes with the call, to be sent once the statement returns,
		# which it never does: psql exits when its backend is killed, and a
		# COMMIT written after that would meet a closed pipe.
		$consumer->{stdin} .= poll_call($poll, 1) . ";\nCOMMIT;\n";
		$consumer->{run}->pump_nb;
		ok( $node->poll_query_until(
				'postgres',
				"SELECT EXISTS (SELECT FROM pg_stat_activity WHERE pid = $pid AND wait_event = 'PgSleep')"),
			"$name: the batch's statement is running, its claims made");
	}
	else
	{
		is($consumer->query_safe(poll_call($poll, 0)), expected_outcomes($poll),
			"$name: the poll answered inside the open transaction");
	}

	if ($how eq 'immediate')
	{
		$node->stop('immediate');
		$consumer->{stdin} .= "COMMIT;\n";
		$consumer->{run}->finish;
		$node->start;
	}
	else
	{
		kill 'KILL', $pid;
		$consumer->{stdin} .= "COMMIT;\n" unless $how eq 'statement';
		$consumer->{run}->finish;
		ok($node->poll_query_until('postgres', 'SELECT count(*) = 0 FROM crash_marker'),
			"$name: server went through crash recovery");
	}
	like($consumer->{stderr}, qr/server closed the connection|connection to server was lost|terminating connection/,
		"$name: the consumer never saw its COMMIT succeed, so it never acknowledged");
	check_state("$name, after the crash");
}

my @p1 = ([ 'a1', 1, 10 ], [ 'a2', 2, 20 ], [ 'a3', 1, 30 ], [ 'a1', 1, 10 ]);
my @p2 = ([ 'a3', 1, 30 ], [ 'b1', 2, 5 ], [ 'b2', 3, 7 ], [ 'b1', 2, 5 ]);
my @p3 = ([ 'b2', 3, 7 ], [ 'c1', 1, 100 ], [ 'c2', 3, 200 ]);
my @p4 = ([ 'c2', 3, 200 ], [ 'd1', 2, 1000 ], [ 'd2', 1, 2000 ], [ 'a1', 1, 10 ]);

deliver('poll 1', \@p1);
check_state('poll 1');

crash_during('poll 2, killed after the call', \@p2, 'returned');
deliver('poll 2 redelivered', \@p2);
check_state('poll 2 redelivered');

crash_during('poll 3, killed in its statement', \@p3, 'statement');
deliver('poll 3 redelivered', \@p3);
check_state('poll 3 redelivered');

crash_during('poll 4, immediate shutdown', \@p4, 'immediate');
deliver('poll 4 redelivered', \@p4);
check_state('poll 4 redelivered');

is( query(q{SELECT string_agg(message_id, ',' ORDER BY message_id) FROM ledger}),
	'a1,a2,a3,b1,b2,c1,c2,d1,d2', 'every message of every poll applied exactly once');

$node->stop;
done_testing();
