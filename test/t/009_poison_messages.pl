
# A poison message under per-key ordering, through a crash.  Three accounts
# get four messages each, in order; the handler fails every time for a2.  The
# consumer claims with claim_in_order, runs the effect, commits, then acks; a
# failed attempt rolls back and is recorded with record_failure; a blocked
# message is not acked, so the broker delivers it again.  Midway the server is
# killed with SIGKILL while a claim and its effect are uncommitted; after the
# restart the broker redelivers everything.  a2 must end quarantined after
# max_attempts, a3 and a4 waiting behind it in order, b and c complete; once the
# handler is fixed and an operator retries a2, a last redelivery of everything
# must apply every message exactly once, in per-account order.

use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('poison');
$node->init;
$node->start;

$node->safe_psql(
	'postgres', q{
CREATE EXTENSION idempotent_inbox;
SELECT inbox.create_inbox('orders');
SELECT inbox.set_max_attempts('orders', 3);
SELECT inbox.set_key_ordering('orders', true);
-- What the handler did, in the order it was done.
CREATE TABLE applied (n bigserial PRIMARY KEY, account text NOT NULL, seq int NOT NULL);
-- The bug: the handler fails for the ids listed here.
CREATE TABLE poison (id text PRIMARY KEY);
INSERT INTO poison VALUES ('a2');
});

my @messages;
for my $account (qw(a b c))
{
	push @messages, { id => "$account$_", account => $account, seq => $_ } for 1 .. 4;
}
# The broker interleaves the accounts: a1 b1 c1 a2 b2 c2 ...
@messages = sort { $a->{seq} <=> $b->{seq} || $a->{account} cmp $b->{account} } @messages;

sub query { return $node->safe_psql('postgres', $_[0]); }

# One delivery in a transaction of its own; the effect fails for a poisoned id.
sub delivery_sql
{
	my ($m) = @_;
	return qq{
BEGIN;
SELECT inbox.claim_in_order('orders', '$m->{id}', '$m->{account}') AS status \\gset
SELECT :'status' = 'claimed' AS go \\gset
\\if :go
SELECT 1 / (SELECT count(*)::int - 1 FROM poison WHERE id = '$m->{id}');
INSERT INTO applied (account, seq) VALUES ('$m->{account}', $m->{seq});
\\endif
COMMIT;
\\echo status=:status
};
}

my %attempts;

# Deliver once; true when the consumer acks.  A failed attempt has rolled back
# with its connection; the failure is recorded in a transaction of its own.
sub deliver
{
	my ($m) = @_;
	my ($out, $err) = ('', '');
	my $rc = $node->psql('postgres', delivery_sql($m),
		stdout => \$out, stderr => \$err, on_error_stop => 1);
	if ($rc != 0)
	{
		die "delivery of $m->{id} failed unexpectedly: $err"
		  unless $err =~ /division by zero/;
		$attempts{ $m->{id} }++;
		my $status = query(
			"SELECT status FROM inbox.record_failure('orders', '$m->{id}', 'division by zero', '$m->{account}')"
		);
		return $status eq 'quarantined';
	}
	my ($status) = $out =~ /status=(\w+)/;
	return $status ne 'blocked' && $status ne 'in_progress';
}

# The broker: every pass delivers the unacked messages in order, until a pass
# acks nothing.  A crash ends the pass: the consumer reconnects and the broker
# starts again from the oldest unacked message.  Returns those left unacked.
sub drain
{
	my ($queue, $crash) = @_;
	my @queue = @$queue;
	while (1)
	{
		my (@left, $crashed);
		for my $i (0 .. $#queue)
		{
			my $m = $queue[$i];
			if ($crash && $crash->($m))
			{
				push @left, @queue[ $i .. $#queue ];
				$crashed = 1;
				last;
			}
			push @left, $m unless deliver($m);
		}
		last if !$crashed && @left == @queue;
		@queue = @left;
	}
	return \@queue;
}

# SIGKILL for the whole server at once: the postmaster is stopped first so that
# it starts nothing new, then its children and itself are killed, as a machine
# losing power leaves them.  The restart runs crash recovery.
sub kill9_server
{
	my $pid = $node->{_pid};
	kill 'STOP', $pid;
	system('pkill', '-KILL', '-P', $pid);
	$node->kill9;
	# The children must be gone before a new postmaster can take the data directory.
	for (1 .. 100)
	{
		last if system("pgrep -P $pid >/dev/null") != 0 && !kill(0, $pid);
		select(undef, undef, undef, 0.1);
	}
}

# The crash: c2's first delivery claims and applies in an open transaction,
# and the server is killed before COMMIT.  Nothing was acked.
my $crashed = 0;
sub crash_at_c2
{
	my ($m) = @_;
	return 0 if $crashed || $m->{id} ne 'c2';
	$crashed = 1;
	my $consumer = $node->background_psql('postgres', on_error_stop => 0);
	$consumer->query_safe('BEGIN');
	is($consumer->query_safe("SELECT inbox.claim_in_order('orders', 'c2', 'c')"),
		'claimed', 'c2 is claimed in the transaction the crash will end');
	$consumer->query_safe("INSERT INTO applied (account, seq) VALUES ('c', 2)");
	kill9_server();
	$consumer->{stdin} .= "COMMIT;\n";
	$consumer->{run}->finish;
	$node->start;
	is(query("SELECT count(*) FROM applied WHERE account = 'c' AND seq = 2"),
		'0', 'the crash took c2\'s uncommitted effect with its claim');
	return 1;
}

my $left = drain(\@messages, \&crash_at_c2);
ok($crashed, 'the server was killed midway');

# The broker redelivers everything after the restart, acked or not.
$left = drain([@messages]);

is($attempts{a2}, 3, 'a2 was attempted max_attempts times, across the crash');
is(join(',', map { $_->{id} } @$left), 'a3,a4', 'only a3 and a4 are left unacked');
is( query("SELECT string_agg(message_id || ':' || state || ':' || position, ',' ORDER BY position)
             FROM inbox.quarantine WHERE ordering_key = 'a'"),
	'a2:quarantined:1,a3:blocked:2,a4:blocked:3',
	'a2 is quarantined, a3 and a4 wait behind it in order');
is(query("SELECT attempts || ' ' || last_error FROM inbox.quarantine WHERE message_id = 'a2'"),
	'3 division by zero', 'the quarantine keeps the attempts and the last error');
is( query("SELECT string_agg(account || seq, ',' ORDER BY n) FROM applied WHERE account <> 'a'"),
	'b1,c1,b2,c2,b3,c3,b4,c4',
	'the other accounts flowed past a2, each message once and in order (c2 at its redelivery)');
is( query("SELECT string_agg(account || seq, ',' ORDER BY n) FROM applied WHERE account = 'a'"),
	'a1', 'nothing of a passed a2');
is(query("SELECT quarantined || ' ' || blocked FROM inbox.stats"), '1 2', 'stats count them');

# The fix ships; the operator retries a2; the broker redelivers everything.
query("DELETE FROM poison");
is(query("SELECT inbox.retry('orders', 'a2', 'handler fixed in 1.4.2')"), 't', 'a2 is retried');
$left = drain([@messages]);

is(scalar(@$left), 0, 'every message is acked');
is( query(
		"SELECT string_agg(account || ':' || seqs, ' ' ORDER BY account) FROM (
		   SELECT account, string_agg(seq::text, ',' ORDER BY n) AS seqs FROM applied GROUP BY account) s"),
	'a:1,2,3,4 b:1,2,3,4 c:1,2,3,4',
	'every message applied exactly once, in per-account order');
is(query("SELECT count(*) FROM inbox.quarantine"), '0', 'nothing is failing or blocked');
is(query("SELECT verb || ' ' || message_id || ' ' || attempts || ' ' || reason FROM inbox.audit"),
	'retry a2 3 handler fixed in 1.4.2', 'the retry is audited');

$node->stop;
done_testing();
