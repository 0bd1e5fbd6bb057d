
# A coordinator and two workers form a Citus cluster with our extension on it.
# The skeleton of the Citus suite: the later files start their cluster the same way
# (test/citus/CitusCluster.pm).  Run (as postgres, Citus and the extension installed):
#   make installcheck REGRESS= ISOLATION= PROVE_TESTS='test/citus/t/*.pl'

use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/..";
use CitusCluster;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my ($coordinator, @workers) = CitusCluster::start(workers => 2);

is( $coordinator->safe_psql(
		'postgres',
		'SELECT string_agg(noderole::text || (nodeport = '
		  . $coordinator->port
		  . ')::text, \',\' ORDER BY nodeid) FROM pg_dist_node'),
	'primarytrue,primaryfalse,primaryfalse',
	'the coordinator knows itself and both workers');

# CREATE EXTENSION on the coordinator is propagated to the workers.
$coordinator->safe_psql('postgres', 'CREATE EXTENSION idempotent_inbox');
for my $i (0 .. $#workers)
{
	is( $workers[$i]->safe_psql(
			'postgres',
			q{SELECT extversion FROM pg_extension WHERE extname = 'idempotent_inbox'}),
		$coordinator->safe_psql(
			'postgres',
			q{SELECT extversion FROM pg_extension WHERE extname = 'idempotent_inbox'}),
		'worker' . ($i + 1) . ' has the extension, at the coordinator\'s version');
}

# A distributed table: rows written through the coordinator land in shards on both
# workers and a query through the coordinator sees them all.
$coordinator->safe_psql(
	'postgres', q{
CREATE TABLE accounts (id int PRIMARY KEY, balance bigint NOT NULL);
SELECT create_distributed_table('accounts', 'id');
INSERT INTO accounts SELECT i, i FROM generate_series(1, 100) i;
});
is( $coordinator->safe_psql('postgres',
		'SELECT count(*), sum(balance) FROM accounts'),
	'100|5050',
	'a query through the coordinator sees every row');
is( $coordinator->safe_psql(
		'postgres', q{
SELECT count(DISTINCT nodeport) FROM citus_shards WHERE table_name = 'accounts'::regclass}),
	'2',
	'the shards are spread over both workers');
my $on_workers = 0;
for my $worker (@workers)
{
	# The shards are ordinary tables on a worker, hidden from its catalog views
	# unless asked for.
	$on_workers += $worker->safe_psql(
		'postgres', q{
SET citus.show_shards_for_app_name_prefixes = '*';
SELECT coalesce(sum((xpath('/row/c/text()',
           query_to_xml(format('SELECT count(*) AS c FROM %I', relname), false, true, '')))[1]::text::int), 0)
FROM pg_class WHERE relname ~ '^accounts_[0-9]+$' AND relkind = 'r'});
}
is($on_workers, 100, 'the workers\' shards hold every row once');

# A shard moves from one worker to the other (logical replication: wal_level =
# logical) and the rows stay visible through the coordinator.
my ($shard, $from) = split /\|/, $coordinator->safe_psql(
	'postgres', q{
SELECT shardid, nodeport FROM citus_shards
 WHERE shardid = get_shard_id_for_distribution_column('accounts', 7)});
my ($to) = grep { $_->port != $from } @workers;
$coordinator->safe_psql('postgres',
	sprintf("SELECT citus_move_shard_placement(%d, '%s', %d, '%s', %d)",
		$shard, $to->host, $from, $to->host, $to->port));
is( $coordinator->safe_psql('postgres',
		"SELECT nodeport FROM citus_shards WHERE shardid = $shard"),
	$to->port,
	'a shard moves to the other worker');
is( $coordinator->safe_psql('postgres',
		'SELECT count(*), sum(balance) FROM accounts'),
	'100|5050',
	'after the move the coordinator still sees every row');

$_->stop for ($coordinator, @workers);
done_testing();
