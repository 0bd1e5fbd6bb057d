
# A consumer crashes after claim_apply has run its effect but before COMMIT.
# The claim and the effect must vanish together, so the broker's redelivery
# is applied exactly once.  Clean commits are interleaved with the crashes so
# that the final totals say which messages took effect and how often.

use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('crash_before_commit');
$node->init;
# The test framework turns this off; a killed backend must make the
# postmaster reinitialise and run crash recovery.
$node->append_conf('postgresql.conf', 'restart_after_crash = on');
$node->start;

$node->safe_psql(
	'postgres', q{
CREATE EXTENSION idempotent_inbox;
SELECT inbox.create_inbox('payments');
CREATE TABLE accounts (id int PRIMARY KEY, balance bigint NOT NULL);
INSERT INTO accounts VALUES (1, 0), (2, 0);
CREATE TABLE ledger (message_id text, amount int);
-- Unlogged tables are emptied by crash recovery: a row here that has
-- disappeared proves the crash-restart cycle is over.
CREATE UNLOGGED TABLE crash_marker (x int);
});

# The effect: credit account 1 and note which message did it, so a double
# application shows up per message and not only in the sum.
my $effect =
  'WITH credit AS (UPDATE accounts SET balance = balance + $2 WHERE id = 1) '
  . 'INSERT INTO ledger VALUES ($1, $2)';

sub deliver
{
	my ($id) = @_;
	return $node->safe_psql('postgres',
		"SELECT inbox.claim_apply('payments', '$id', '$effect', '$id', 50)");
}

sub query { return $node->safe_psql('postgres', $_[0]); }

# Deliver $id in an open transaction, SIGKILL the backend before COMMIT,
# and wait for the postmaster to have recovered.
sub crash_before_commit
{
	my ($id, $before) = @_;

	query('INSERT INTO crash_marker VALUES (1)');
	my $consumer = $node->background_psql('postgres', on_error_stop => 0);
	my $pid = $consumer->query_safe('SELECT pg_backend_pid()');
	$consumer->query_safe('BEGIN');
	is( $consumer->query_safe(
			"SELECT inbox.claim_apply('payments', '$id', '$effect', '$id', 50)"),
		'applied',
		"$id: first delivery applied inside the open transaction");
	is( $consumer->query_safe(
			"SELECT balance FROM accounts WHERE id = 1"),
		$before + 50,
		"$id: the effect is visible to its own transaction before the crash");

	kill 'KILL', $pid;

	# The consumer's COMMIT never reaches a live backend, so it never acks.
	# psql exits on the lost connection, so rather than query(), which waits
	# for output that will not come, feed it and wait for it to exit.
	$consumer->{stdin} .= "COMMIT;\n";
	$consumer->{run}->finish;
	like(
		$consumer->{stderr},
		qr/server closed the connection|connection to server was lost/,
		"$id: COMMIT after the kill fails");

	ok( $node->poll_query_until(
			'postgres', 'SELECT count(*) = 0 FROM crash_marker'),
		"$id: server went through crash recovery");

	is(query("SELECT count(*) FROM payments WHERE message_id = '$id'"),
		0, "$id: claim is gone after the crash");
	is(query("SELECT count(*) FROM ledger WHERE message_id = '$id'"),
		0, "$id: effect is gone after the crash");
	is(query('SELECT balance FROM accounts WHERE id = 1'),
		$before, "$id: balance is back to its value before the crash");
}

my @script = (
	[ m1 => 'commit' ],
	[ m2 => 'crash' ],
	[ m3 => 'commit' ],
	[ m4 => 'crash' ],
	[ m5 => 'crash' ],
	[ m6 => 'commit' ]);

my $expected = 0;
foreach my $step (@script)
{
	my ($id, $how) = @$step;

	crash_before_commit($id, $expected) if $how eq 'crash';

	is(deliver($id), 'applied', "$id: delivery after a $how is applied");
	is(deliver($id), 'duplicate', "$id: redelivery is a duplicate");
	$expected += 50;
	is(query('SELECT balance FROM accounts WHERE id = 1'),
		$expected, "$id: balance counts every message once so far");
}

is(query('SELECT count(*) FROM payments'),
	scalar(@script), 'one claim per message');
is( query(
		q{SELECT string_agg(message_id || ':' || n, ',' ORDER BY message_id)
		    FROM (SELECT message_id, count(*) AS n FROM ledger GROUP BY 1) s}),
	'm1:1,m2:1,m3:1,m4:1,m5:1,m6:1',
	'every message applied exactly once');

# Control: the same redelivery without the inbox doubles the credit, so the
# checks above would have noticed a second application.
query('UPDATE accounts SET balance = balance + 50 WHERE id = 2') for 1 .. 2;
is(query('SELECT balance FROM accounts WHERE id = 2'),
	100, 'control: a plain UPDATE redelivered is applied twice');

$node->stop;
done_testing();
