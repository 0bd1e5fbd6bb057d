# The live counters of inbox.stats live in a fixed-size shared hash (issue 9,
# item 7): creating and dropping inboxes, any number of times, never takes more
# shared memory than was reserved at startup.  Entries of dropped inboxes (and of
# dropped databases) are reused; when every entry belongs to a live inbox, new
# inboxes are not counted (one WARNING, NULL counters) and their claims still work.

use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $max_inboxes = 16;

my $node = PostgreSQL::Test::Cluster->new('live_counters');
$node->init;
$node->append_conf(
	'postgresql.conf', qq{
shared_preload_libraries = 'idempotent_inbox'
idempotent_inbox.max_inboxes = $max_inboxes
idempotent_inbox.purge_interval = 0
});
$node->start;

sub query { return $node->safe_psql(@_); }

# Shared memory as pg_shmem_allocations reports it: our hash, and what was taken
# after startup without a name (a dynahash growing past its reservation).
sub shmem
{
	return query('postgres', q{
		SELECT coalesce(sum(allocated_size) FILTER (WHERE name = 'idempotent_inbox counters'), 0)
		       || ' ' ||
		       coalesce(sum(allocated_size) FILTER (WHERE name = '<anonymous>'), 0)
		  FROM pg_shmem_allocations});
}

query('postgres', 'CREATE EXTENSION idempotent_inbox');
query('postgres', q{SELECT inbox.create_inbox('warmup'); SELECT inbox.claim('warmup', 'x')});
my $before = shmem();

# Create, use and drop many more inboxes than there are entries, each in its own
# transaction, as an application with short-lived inboxes would.
my $churn = join("\n",
	map { "SELECT inbox.create_inbox('churn_$_'); SELECT inbox.claim('churn_$_', 'x'); SELECT inbox.drop_inbox('churn_$_');" }
	  1 .. 10 * $max_inboxes);
query('postgres', $churn);
is(shmem(), $before, 'creating and dropping inboxes takes no shared memory beyond the reservation');

# An inbox made after the churn is counted: dropped inboxes gave their entries back.
query('postgres', q{SELECT inbox.create_inbox('after_churn'); SELECT inbox.claim('after_churn', 'a'); SELECT inbox.claim('after_churn', 'a')});
is(query('postgres', q{SELECT claims || '/' || duplicates FROM inbox.live_counters('after_churn')}),
	'1/1', 'an inbox created after the churn is counted');

# Entries of a dropped database are reclaimed when the hash is full.
query('postgres', 'CREATE DATABASE gone');
query('gone', 'CREATE EXTENSION idempotent_inbox');
query('gone', join("\n", map { "SELECT inbox.create_inbox('g_$_'); SELECT inbox.claim('g_$_', 'x');" } 1 .. $max_inboxes - 4));
query('postgres', 'DROP DATABASE gone');
query('postgres', join("\n", map { "SELECT inbox.create_inbox('live_$_'); SELECT inbox.claim('live_$_', 'x');" } 1 .. $max_inboxes - 2));
is(query('postgres', q{SELECT count(*) FROM inbox.stats WHERE claims IS NULL}),
	'0', 'entries of a dropped database are reused');

# More live inboxes than entries: claims go on, the extra ones show NULL, and one
# WARNING says why.
my $log_offset = -s $node->logfile;
my ($ret, $stdout, $stderr) = $node->psql('postgres',
	join("\n", map { "SELECT inbox.create_inbox('extra_$_'); SELECT inbox.claim('extra_$_', 'x');" } 1 .. 6));
is($ret, 0, 'claims in inboxes beyond max_inboxes succeed');
is(query('postgres', q{SELECT count(*) FROM extra_1 JOIN extra_6 USING (message_id)}), '1',
	'their claims were made');
my $uncounted = query('postgres', q{SELECT count(*) FROM inbox.stats WHERE claims IS NULL});
cmp_ok($uncounted, '>', 0, "inboxes not counted show NULL ($uncounted)");
is(query('postgres', q{SELECT count(*) FROM inbox.stats WHERE claims IS NOT NULL}),
	"$max_inboxes", 'exactly max_inboxes inboxes are counted');
my $log = slurp_file($node->logfile, $log_offset);
my @warnings = ($log =~ /WARNING:  idempotent_inbox counts no more inboxes/g);
is(scalar(@warnings), 1, 'one WARNING when the counters are full');
is(shmem(), $before, 'a full hash takes no more shared memory');

# Dropping live inboxes frees their entries at once for the next ones.
query('postgres', join("\n", map { "SELECT inbox.drop_inbox('live_$_');" } 1 .. 4));
query('postgres', q{SELECT inbox.create_inbox('late'); SELECT inbox.claim('late', 'x')});
is(query('postgres', q{SELECT claims FROM inbox.live_counters('late')}), '1',
	'an inbox made after drops is counted again');

# live_counters answers for any relation and any caller, never an error, and
# shows nothing to a role that may not read the inbox.
query('postgres', 'CREATE ROLE regress_stranger');
is( query('postgres', q{SET ROLE regress_stranger; SELECT claims IS NULL FROM inbox.live_counters('late')}),
	't', 'no counters for a role that may not read the inbox');
is( query('postgres', q{SET ROLE regress_stranger; SELECT count(*) FROM inbox.stats WHERE claims IS NOT NULL}),
	'0', 'inbox.stats shows a stranger no counters, and answers');
is(query('postgres', q{SELECT claims IS NULL FROM inbox.live_counters(12345678)}), 't',
	'a relation that does not exist: NULL counters, no error');

# An inbox whose shape its owner broke still answers in live_counters.
query('postgres', q{ALTER TABLE late DROP CONSTRAINT late_pkey});
is(query('postgres', q{SELECT claims FROM inbox.live_counters('late')}), '1',
	'an inbox with a broken shape still has its counters');

$node->stop;
done_testing();
