# A Citus cluster of PostgreSQL::Test::Cluster nodes for the test/citus/t suite: a
# coordinator and N workers, each its own cluster on this machine, on a private port
# with its socket in the test's private directory.
#
#   my ($coordinator, @workers) = CitusCluster::start(workers => 2);
#
# preload => 1 also preloads idempotent_inbox (its counters), with the purge worker off.
#
# Every node preloads citus and has CREATE EXTENSION citus; the coordinator knows
# itself (citus_set_coordinator_host) and the workers (citus_add_node).  The nodes
# reach each other over their Unix sockets: the node name Citus stores is the socket
# directory, and citus.local_hostname names it too, since a node that connects to
# itself (a shard move does) would otherwise try localhost over TCP, where the test
# nodes do not listen.
package CitusCluster;

use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Time::HiRes ();

sub new_node
{
	my ($name, $preload) = @_;
	my $node = PostgreSQL::Test::Cluster->new($name);
	$node->init;
	$node->append_conf('postgresql.conf',
		$preload
		? "shared_preload_libraries = 'citus,idempotent_inbox'\n"
		  # The counters in shared memory, without a purge worker deleting rows.
		  . "idempotent_inbox.purge_interval = 0\n"
		: "shared_preload_libraries = 'citus'\n");
	$node->append_conf(
		'postgresql.conf', q{
# Citus commits a transaction that wrote on several nodes with two-phase commit.
max_prepared_transactions = 20
# Shard moves use logical replication.
wal_level = logical
max_worker_processes = 16
max_wal_senders = 10
max_replication_slots = 10
# The tests kill nodes on purpose; a worker that crashed must come back.
restart_after_crash = on
});
	$node->append_conf('postgresql.conf',
		"citus.local_hostname = '" . $node->host . "'");
	$node->start;
	$node->safe_psql('postgres', 'CREATE EXTENSION citus');
	return $node;
}

sub start
{
	my (%args) = @_;
	my $workers = $args{workers} // 2;
	my $coordinator = new_node('coordinator', $args{preload});
	my @workers = map { new_node("worker$_", $args{preload}) } 1 .. $workers;
	$coordinator->safe_psql('postgres',
		sprintf("SELECT citus_set_coordinator_host('%s', %d)",
			$coordinator->host, $coordinator->port));
	for my $worker (@workers)
	{
		$coordinator->safe_psql('postgres',
			sprintf("SELECT citus_add_node('%s', %d)", $worker->host,
				$worker->port));
	}
	return ($coordinator, @workers);
}

# Start a node again after its postmaster was killed with SIGKILL.  Its backends
# notice and exit on their own; until they have, a new postmaster refuses the old
# shared memory, so this retries as src/test/recovery/t/017_shm.pl does.
sub restart_killed
{
	my ($node) = @_;
	for (1 .. 10 * $PostgreSQL::Test::Utils::timeout_default)
	{
		return 1 if $node->start(fail_ok => 1);
		Time::HiRes::usleep(100_000);
		$node->stop('fast', fail_ok => 1);
	}
	return $node->start;
}

1;
