# A broker's deliveries for the Citus fault tests: messages delivered by psql
# scripts through one node, again until each is acknowledged, while a worker is
# killed with kill -9 or a shard moves.
#
#   my $d = Deliveries->new(
#       node  => $coordinator,
#       name  => 'writes',                       # names the script files
#       label => sub { join ' ', @{ $_[0] } },   # a message's name: word characters, spaces
#       sql   => sub { my ($message, $i) = @_; "SELECT consume(...)" },
#       acked => sub { my ($label, $answer) = @_; $answer ne 'in_progress' });  # optional
#   Deliveries::faults(deliveries => $d, coordinator => $c, workers => \@workers, ...);
#
# Each delivery follows an \echo of its message's label; the line after it is its
# answer, and a delivery without an answer (an error, a lost connection) is not
# acknowledged.  Scripts run from files, so a child started in the background
# needs no pumping.

package Deliveries;

use strict;
use warnings;
use IPC::Run;
use PostgreSQL::Test::Utils;
use Test::More;

sub new
{
	my ($class, %args) = @_;
	return bless { scripts => 0, acked => sub { 1 }, %args }, $class;
}

sub script_of
{
	my ($self, @messages) = @_;
	my $i = 0;
	return join '', map {
		"\\echo '#" . $self->{label}->($_) . "'\n" . $self->{sql}->($_, $i++) . ";\n"
	} @messages;
}

# Start a script delivering the messages; finish() waits for it.
sub start
{
	my ($self, @messages) = @_;
	my $base = "$PostgreSQL::Test::Utils::tmp_check/$self->{name}_" . $self->{scripts}++;
	my $node = $self->{node};
	append_to_file("$base.sql", $self->script_of(@messages));
	my $run = IPC::Run::start(
		[ 'psql', '-XAtq', '-h', $node->host, '-p', $node->port, '-d', 'postgres', '-f', '-' ],
		'<', "$base.sql", '>', "$base.out", '2>', "$base.err");
	return [ $base, $run ];
}

# The script's stderr and the labels of the messages it acknowledged.
sub finish
{
	my ($self, $script) = @_;
	my ($base, $run) = @$script;
	my ($label, %acked);
	$run->finish;
	foreach my $line (split /\n/, slurp_file("$base.out"))
	{
		if ($line =~ /^#(.+)$/) { $label = $1; next; }
		next unless defined $label;
		$acked{$label} = 1 if $self->{acked}->($label, $line);
		undef $label;
	}
	return (slurp_file("$base.err"), \%acked);
}

# Deliver as a broker does: again and again, in the order given, until each
# message was acknowledged (a call that failed, say on a connection the restarted
# worker dropped, is delivered again).
sub deliver_all
{
	my ($self, @pending) = @_;
	for (my $round = 0; @pending && $round < 10; $round++)
	{
		my (undef, $acked) = $self->finish($self->start(@pending));
		@pending = grep { !$acked->{ $self->{label}->($_) } } @pending;
	}
	note scalar(@pending) . ' messages never acknowledged' if @pending;
}

# The faults every Citus load test runs:
#  a. kill -9 of the first worker while a script delivers messages(@$killed), then
#     its restart and every message delivered again, in both orders;
#  b. a move of table's first shard, in each transfer mode, while rounds of five
#     keys of messages are delivered (keys from 1000, 1100), then all of them again.
# check(first, last, what) asserts the state that one application of each message
# of keys first..last leaves; started is a query that is true once the load of (a)
# is under way.
sub faults
{
	my (%args) = @_;
	my ($d, $c, $workers) = @args{qw(deliveries coordinator workers)};
	my ($messages, $check) = @args{qw(messages check)};
	my ($first_key, $last_key) = @{ $args{killed} };

	my @load = $messages->($first_key, $last_key);
	my $script = $d->start(@load);
	my $victim = $workers->[0];
	$c->poll_query_until('postgres', $args{started}) or die 'the load never started';
	$victim->kill9;
	my ($err) = $d->finish($script);
	# A worker backend that sees its postmaster die may send its FATAL between two
	# commands; Citus 13's notice receiver raises it again at FATAL on the
	# coordinator, whose session then ends (psql stops).  Either way the
	# unacknowledged messages are delivered again, as a broker would after a
	# consumer lost its connection.
	note 'errors while the worker was down: ' . scalar(() = $err =~ /ERROR|FATAL/g);
	ok($err =~ /ERROR|FATAL/, 'deliveries failed while the worker was down (the kill came mid-load)');
	$args{while_down}->() if $args{while_down};
	CitusCluster::restart_killed($victim);
	$d->deliver_all(@load);
	$d->deliver_all(reverse @load);
	$check->($first_key, $last_key, 'after kill -9 of a worker and redelivery');

	my $round = 0;
	foreach my $mode (qw(block_writes force_logical))
	{
		my ($shard, $src_port) = split /\|/, $c->safe_psql('postgres',
			"SELECT shardid, nodeport FROM citus_shards WHERE table_name = '$args{table}'::regclass
			  ORDER BY shardid LIMIT 1");
		my ($src) = grep { $_->port == $src_port } @$workers;
		my ($dst) = grep { $_->port != $src_port } @$workers;
		my $mover = $c->background_psql('postgres', on_error_stop => 0);
		$mover->{stdin} .= sprintf(
			"SELECT citus_move_shard_placement(%d, '%s', %d, '%s', %d, shard_transfer_mode => '%s');\n"
			  . "\\echo '#moved'\n",
			$shard, $src->host, $src->port, $dst->host, $dst->port, $mode);
		$mover->{timeout}->start;
		$mover->{run}->pump_nb;
		my $first = 1000 + 100 * $round++;
		my $next = $first;
		# Rounds of 5 keys until the move is over (at least one during it).
		do
		{
			$d->deliver_all($messages->($next, $next + 4));
			$next += 5;
			$mover->{run}->pump_nb;
		} while ($mover->{stdout} !~ /#moved/ && $next < $first + 90);
		$mover->{run}->pump until $mover->{stdout} =~ /#moved/ || $mover->{timeout}->is_expired;
		note "the $mode move: stdout $mover->{stdout}, stderr $mover->{stderr}, "
		  . ($next - $first) / 5 . ' rounds';
		unlike($mover->{stderr}, qr/ERROR/, "the $mode move succeeds while consumers deliver");
		$mover->quit;
		is($c->safe_psql('postgres', "SELECT nodeport FROM citus_shards WHERE shardid = $shard"),
			$dst->port, "the $mode move put the shard on the other worker");
		$d->deliver_all(reverse $messages->($first, $next - 1));
		$check->($first, $next - 1, "around a $mode shard move");
	}
}

1;
