
# A database updated from 0.1 to 0.2 and on to 0.3 dumps and restores like a fresh
# one: the 0.2 update records the extension in pg_catalog and makes schema inbox a member, so the
# dump says CREATE EXTENSION ... WITH SCHEMA pg_catalog and no CREATE SCHEMA inbox
# (which 0.2 would refuse), and the restored inboxes still know their claims.

use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('update_dump_restore');
$node->init;
$node->start;

my $dumpdir = PostgreSQL::Test::Utils::tempdir;

$node->safe_psql('postgres', 'CREATE DATABASE source');
$node->safe_psql(
	'source', q{
CREATE EXTENSION idempotent_inbox VERSION '0.1';
CREATE SCHEMA app;
SELECT inbox.create_inbox('app.orders', 'text', '7 days');
SELECT inbox.create_inbox('app.events', 'uuid');
SELECT inbox.create_inbox('app.offsets', 'bigint');
SELECT inbox.claim('app.orders', 'o1'), inbox.claim('app.events', md5('e1')::uuid),
       inbox.claim('app.offsets', 1::bigint);
SELECT inbox.advance('app.offsets', 'topic', 0, 10);
ALTER EXTENSION idempotent_inbox UPDATE TO '0.2';
ALTER EXTENSION idempotent_inbox UPDATE TO '0.3';
SELECT inbox.create_sharded_inbox('app.by_account', 'account_id', 'bigint');
SELECT inbox.claim_sharded('app.by_account', 7, 'p1');
-- A fenced partition with offsets completed above its watermark, after the update.
SELECT inbox.fence('app.offsets', 'group', 0, 4);
SELECT inbox.claim_offset('app.offsets', 'group', 0, o, 4) FROM unnest(ARRAY[0, 1, 3, 4]) o;
});

$node->command_ok([ 'pg_dump', '-d', 'source', '-f', "$dumpdir/updated.sql" ],
	'dump of the updated database');
my $dump = slurp_file("$dumpdir/updated.sql");
like($dump, qr/CREATE EXTENSION IF NOT EXISTS idempotent_inbox WITH SCHEMA pg_catalog;/,
	'the dump creates the extension as a fresh install does');
unlike($dump, qr/CREATE SCHEMA inbox/, 'the dump does not create schema inbox itself');

$node->safe_psql('postgres', 'CREATE DATABASE restored');
$node->command_ok(
	[ 'psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d', 'restored', '-f', "$dumpdir/updated.sql" ],
	'the dump restores without error');

my $state = q{
SELECT extversion, extnamespace::regnamespace,
       (SELECT count(*) FROM pg_depend d WHERE d.classid = 'pg_namespace'::regclass
           AND d.objid = 'inbox'::regnamespace AND d.refobjid = e.oid AND d.deptype = 'e')
  FROM pg_extension e WHERE extname = 'idempotent_inbox'};
is($node->safe_psql('restored', $state), '0.3|pg_catalog|1',
	'restored: 0.3, recorded in pg_catalog, schema inbox a member');
is($node->safe_psql('restored', $state), $node->safe_psql('source', $state),
	'restored and source agree');

my $inboxes =
  q{SELECT inbox, key_type, retention, shard_key FROM inbox.inboxes ORDER BY inbox::text};
is($node->safe_psql('restored', $inboxes), $node->safe_psql('source', $inboxes),
	'restored: the same inboxes with the same settings');
is( $node->safe_psql(
		'restored', q{
SELECT inbox.claim('app.orders', 'o1'), inbox.claim('app.events', md5('e1')::uuid),
       inbox.claim('app.offsets', 1::bigint), inbox.claim('app.orders', 'o2'),
       inbox.advance('app.offsets', 'topic', 0, 10)}),
	'f|f|f|t|f',
	'restored: old ids are duplicates, a fresh one is claimed, the position is kept');
is( $node->safe_psql(
		'restored', q{
SELECT inbox.claim_sharded('app.by_account', 7, 'p1'), inbox.claim_sharded('app.by_account', 8, 'p1')}),
	'f|t',
	'restored: a sharded inbox keeps its claims, keyed by shard key and id');

my $groups = q{SELECT "partition", "offset", seek_to, generation, completed
                 FROM inbox.resume_points('app.offsets', 'group')};
is($node->safe_psql('restored', $groups), '0|1|2|4|{3,4}',
	'restored: the watermark, generation and offsets completed above it');
is($node->safe_psql('restored', $groups), $node->safe_psql('source', $groups),
	'restored and source agree on the partition');
is( $node->safe_psql(
		'restored', q{
SELECT inbox.claim_offset('app.offsets', 'group', 0, 3, 4), inbox.claim_offset('app.offsets', 'group', 0, 2, 4),
       inbox.position('app.offsets', 'group', 0)}),
	'f|t|4',
	'restored: a completed offset is a duplicate, the gap closes');
my ($rc, $out, $err) = $node->psql('restored', q{SELECT inbox.claim_offset('app.offsets', 'group', 0, 9, 3)});
like($err, qr/belongs to generation 4/, 'restored: the generation still fences the partition');

$node->stop;
done_testing();
