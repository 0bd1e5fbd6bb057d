
# Claims committed just before an immediate shutdown live only in WAL.  After
# crash recovery every one of them must still be there, so the broker's replay
# of the whole backlog is absorbed and each message counts exactly once.  A
# claim still open at the shutdown must be gone, so its message is applied on
# redelivery.  Covers a uuid-keyed and a bigint-keyed inbox.

use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $committed = 20;    # applied and committed before the shutdown
my $new       = 5;     # first seen after the restart
my $total     = $committed + $new;

my $node = PostgreSQL::Test::Cluster->new('immediate_shutdown');
$node->init;
# No checkpoint may write the claims out before the shutdown: recovery
# has to find them in WAL.
$node->append_conf('postgresql.conf', 'checkpoint_timeout = 1h');
$node->start;

$node->safe_psql(
	'postgres', q{
CREATE EXTENSION idempotent_inbox;
SELECT inbox.create_inbox('uuid_inbox', 'uuid');
SELECT inbox.create_inbox('bigint_inbox', 'bigint');
CREATE TABLE accounts (id text PRIMARY KEY, balance bigint NOT NULL);
INSERT INTO accounts VALUES ('uuid', 0), ('bigint', 0), ('plain', 0);
});

# Message $i credits $i, so the sum also tells which messages took effect.
my %key = (
	uuid   => sub { "md5('message $_[0]')::uuid" },
	bigint => sub { "(4611686018427387904 + $_[0])::bigint" });

sub delivery
{
	my ($kind, $i) = @_;
	my $id = $key{$kind}->($i);
	return "SELECT inbox.claim_apply('${kind}_inbox', $id, "
	  . "'UPDATE accounts SET balance = balance + \$1 WHERE id = ''$kind''', $i);\n";
}

# The same effect without an inbox, as a control.
sub plain_delivery
{
	return "UPDATE accounts SET balance = balance + $_[0] WHERE id = 'plain';\n";
}

# Each statement is its own transaction, as a consumer that commits per
# message; returns the outcomes in delivery order.
sub deliver_all
{
	my ($kind, $from, $to) = @_;
	my $sql = join('', map { delivery($kind, $_) } $from .. $to);
	return join(',', split(/\n/, $node->safe_psql('postgres', $sql)));
}

sub outcomes
{
	my ($outcome, $n) = @_;
	return join(',', ($outcome) x $n);
}

sub query { return $node->safe_psql('postgres', $_[0]); }
sub sum_to { my $n = shift; return $n * ($n + 1) / 2; }

foreach my $kind (sort keys %key)
{
	is(deliver_all($kind, 1, $committed),
		outcomes('applied', $committed), "$kind: first deliveries applied");
}
query(join('', map { plain_delivery($_) } 1 .. $committed));

# A consumer caught mid-message by the shutdown.
my $inflight = $node->background_psql('postgres', on_error_stop => 0);
$inflight->query_safe('BEGIN');
foreach my $kind (sort keys %key)
{
	is($inflight->query_safe(delivery($kind, $total + 1)),
		'applied', "$kind: in-flight message applied before the shutdown");
}

$node->stop('immediate');
# The in-flight consumer's COMMIT finds no server; psql exits on it.
$inflight->{stdin} .= "COMMIT;\n";
$inflight->{run}->finish;
like(
	$inflight->{stderr},
	qr/server closed the connection|connection to server was lost/,
	'the in-flight transaction did not commit');
$node->start;
ok($node->log_contains('database system was not properly shut down'),
	'restart ran crash recovery');

foreach my $kind (sort keys %key)
{
	is( query("SELECT count(*) FROM ${kind}_inbox"),
		$committed, "$kind: committed claims survived, the open one did not");
	is( deliver_all($kind, 1, $total + 1),
		outcomes('duplicate', $committed) . ','
		  . outcomes('applied', $new + 1),
		"$kind: replayed backlog is duplicate, new and in-flight messages applied"
	);
	is( deliver_all($kind, 1, $total + 1),
		outcomes('duplicate', $total + 1),
		"$kind: a second replay is all duplicates");
	is(query("SELECT balance FROM accounts WHERE id = '$kind'"),
		sum_to($total + 1), "$kind: balance counts each message once");
	is(query("SELECT count(*) FROM ${kind}_inbox"),
		$total + 1, "$kind: one claim per message");
}

# Control: replaying the backlog without an inbox counts it twice.
query(join('', map { plain_delivery($_) } 1 .. $total + 1));
is( query("SELECT balance FROM accounts WHERE id = 'plain'"),
	sum_to($committed) + sum_to($total + 1),
	'control: without an inbox the replayed messages count twice');

$node->stop;
done_testing();
