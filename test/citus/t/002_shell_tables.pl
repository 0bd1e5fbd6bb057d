# The executor-free paths never touch a Citus table's shell.  On a coordinator a
# distributed table is an empty shell whose rows live in shards on the workers; a
# claim written into the shell would be invisible to every later claim (a duplicate
# applied twice), and a row read from it would be missing.  The extension detects
# Citus tables explicitly (src/citus_tables.c) rather than counting on the TRUNCATE
# trigger Citus puts on its tables today, which sends any table with a trigger to SQL
# (Citus does not let a test drop that trigger, so this file cannot show the check
# working alone; it shows that no path writes or reads the shell).

use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/..";
use CitusCluster;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my ($coordinator, @workers) = CitusCluster::start(workers => 2);
my $c = $coordinator;

$c->safe_psql(
	'postgres', q{
CREATE EXTENSION idempotent_inbox;
SELECT inbox.create_inbox('payments_inbox', 'text');
SELECT create_distributed_table('payments_inbox', 'message_id');
CREATE TABLE docs (id int PRIMARY KEY, body text, state text);
SELECT create_distributed_table('docs', 'id');
});

# The size of a relation's own file on the coordinator: the shell's storage.
sub shell_bytes
{
	my ($rel) = @_;
	return $c->safe_psql('postgres',
		"SELECT (pg_stat_file(pg_relation_filepath('$rel'))).size");
}

# Claims through the coordinator, under every order of steps the claim path knows.
my $n = 0;
for my $path (qw(auto probe insert update))
{
	my @fresh;
	for my $i (1 .. 5)
	{
		$n++;
		push @fresh, $c->safe_psql('postgres',
			"SET idempotent_inbox.force_path = '$path'; "
			  . "SELECT inbox.claim('payments_inbox', 'm$n')");
	}
	is(join(',', @fresh), 't,t,t,t,t', "force_path=$path: fresh ids are claimed");
}
is($c->safe_psql('postgres', 'SELECT count(*) FROM payments_inbox'),
	$n, 'every claim is in the shards, seen through the coordinator');
is(shell_bytes('payments_inbox'), 0, 'the shell on the coordinator stayed empty');

for my $path (qw(auto probe insert update))
{
	is( $c->safe_psql(
			'postgres',
			"SET idempotent_inbox.force_path = '$path'; "
			  . "SELECT string_agg(inbox.claim('payments_inbox', 'm' || i)::text, ',') "
			  . "FROM generate_series(1, $n) i"),
		join(',', ('false') x $n),
		"force_path=$path: every redelivery is a duplicate");
}
is( $c->safe_psql(
		'postgres',
		q{SELECT inbox.claim_apply('payments_inbox', 'm2', 'SELECT 1'),
		         inbox.claim_apply('payments_inbox', 'm-new', 'SELECT 1')}),
	'duplicate|applied',
	'claim_apply answers from the shards');
# try_claim reads the claim's row from the shard (a statement Citus routes there),
# never from the shell.
is( $c->safe_psql(
		'postgres',
		q{SELECT inbox.try_claim('payments_inbox', 'm1'), inbox.try_claim('payments_inbox', 'm-try')}),
	'duplicate|claimed',
	'try_claim answers from the shards');
is( $c->safe_psql(
		'postgres',
		q{SELECT string_agg(x, ',' ORDER BY x)
		    FROM inbox.claim_many('payments_inbox', ARRAY['m1', 'm3', 'b1', 'b2', 'b1']) x}),
	'b1,b2', 'claim_many returns only the ids the shards did not have');

# transition reads the stored state through SQL, which Citus routes to the shard;
# read from the shell, the row would be "missing".  (Citus refuses transition's and
# upsert's statements for now: STABLE functions with column references in an UPDATE.
# An error, never an answer from the shell.)
$c->safe_psql('postgres', q{INSERT INTO docs VALUES (1, 'b', 'NEW')});
my ($rc, $answer, $error) = $c->psql('postgres',
	q{SELECT inbox.transition('docs', '{"id": 1}', 'state', ARRAY['NEW'], 'DONE')});
note "transition on a distributed table: rc=$rc, answer=$answer, error=$error";
ok($rc != 0 || $answer eq 'moved', 'transition never answers from the shell');
isnt($answer, 'missing', 'transition does not call a row in a shard missing');
is(shell_bytes('docs'), 0, 'the shell of docs stayed empty');

$_->stop for ($coordinator, @workers);
done_testing();
