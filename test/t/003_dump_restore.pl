
# Inbox tables are user data.  A plain and a custom-format dump must bring
# back every inbox with its settings and its claims, so that a consumer
# pointed at the restored database still recognises every message it had
# applied.  DROP EXTENSION must leave the inbox tables and their rows.

use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('dump_restore');
$node->init;
$node->start;

my $dumpdir = PostgreSQL::Test::Utils::tempdir;

$node->safe_psql('postgres', 'CREATE DATABASE source');
$node->safe_psql(
	'source', q{
CREATE EXTENSION idempotent_inbox;
CREATE SCHEMA app;
SELECT inbox.create_inbox('orders_inbox');
SELECT inbox.create_inbox('app.events', 'uuid', '7 days');
SELECT inbox.create_inbox('offsets', 'bigint', '1 hour');
SELECT inbox.claim('orders_inbox', 'order-1');
SELECT inbox.claim('orders_inbox', 'order-2');
SELECT inbox.claim('orders_inbox', 'order-3');
SELECT inbox.claim('app.events', md5('e1')::uuid);
SELECT inbox.claim('app.events', md5('e2')::uuid);
SELECT inbox.claim('offsets', 1::bigint);
SELECT inbox.claim('offsets', -5::bigint);
SELECT inbox.claim('offsets', 9223372036854775807::bigint);
SELECT inbox.create_inbox('api_keys');
SELECT token FROM inbox.acquire('api_keys', 'pay-1', '1 hour', inbox.fingerprint('{"amount": 5}'));
SELECT inbox.finish('api_keys', 'pay-1', 1, '{"charge": "ch_1"}');
SELECT token FROM inbox.acquire('api_keys', 'pay-2', '1 hour');
CREATE TABLE app.payments (id int PRIMARY KEY, status text NOT NULL);
INSERT INTO app.payments VALUES (1, 'PENDING'), (2, 'PAID');
SELECT inbox.guard_transitions('app.payments', 'status',
    '{"PENDING": ["PAID"], "PAID": ["SHIPPED"]}');
});

# A state machine lives in its trigger, so a dump carries it.
my $machines = q{
SELECT target, state_column, edges FROM inbox.state_machines ORDER BY 1::text, 2};

my $inbox_list = q{
SELECT inbox, key_type, retention FROM inbox.inboxes ORDER BY inbox::text};
# created_at is compared between databases, never printed.
my $inbox_settings = q{
SELECT inbox, key_type, retention, created_at FROM inbox.inboxes ORDER BY inbox::text};
my $claims = q{
SELECT 'orders', message_id::text, claimed_at FROM orders_inbox
UNION ALL SELECT 'events', message_id::text, claimed_at FROM app.events
UNION ALL SELECT 'offsets', message_id::text, claimed_at FROM offsets
ORDER BY 1, 2};
# Committed one by one, as a consumer would: old ids first, then fresh ones.
my $redeliveries = q{
SELECT inbox.claim('orders_inbox', 'order-1');
SELECT inbox.claim('orders_inbox', 'order-3');
SELECT inbox.claim('app.events', md5('e2')::uuid);
SELECT inbox.claim('offsets', -5::bigint);
SELECT inbox.claim('offsets', 9223372036854775807::bigint);
SELECT inbox.claim('orders_inbox', 'order-4');
SELECT inbox.claim('app.events', md5('e3')::uuid);
SELECT inbox.claim('offsets', 2::bigint);
};
my $counts = q{
SELECT (SELECT count(*) FROM orders_inbox) || ','
    || (SELECT count(*) FROM app.events) || ','
    || (SELECT count(*) FROM offsets)};

sub query { my ($db, $sql) = @_; return $node->safe_psql($db, $sql); }

is( query('source', $inbox_list),
	"api_keys|text|\napp.events|uuid|7 days\noffsets|bigint|01:00:00\norders_inbox|text|",
	'source lists its four inboxes with key types and retention');
is(query('source', $counts), '3,2,3', 'source holds the claims');

$node->command_ok(
	[ 'pg_dump', '-d', 'source', '-f', "$dumpdir/plain.sql" ],
	'plain dump');
$node->command_ok(
	[ 'pg_dump', '-d', 'source', '-Fc', '-f', "$dumpdir/custom.dump" ],
	'custom-format dump');

$node->safe_psql('postgres', 'CREATE DATABASE from_plain');
$node->safe_psql('postgres', 'CREATE DATABASE from_custom');
$node->command_ok(
	[
		'psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1',
		'-d', 'from_plain', '-f', "$dumpdir/plain.sql"
	],
	'plain dump restores without error');
$node->command_ok(
	[
		'pg_restore', '--exit-on-error', '-d', 'from_custom',
		"$dumpdir/custom.dump"
	],
	'custom dump restores without error');

foreach my $db ('from_plain', 'from_custom')
{
	is(query($db, $inbox_settings), query('source', $inbox_settings),
		"$db: same inboxes with the same settings");
	is(query($db, $claims), query('source', $claims),
		"$db: same claims with the same claim times");
	is( query($db, $redeliveries),
		"f\nf\nf\nf\nf\nt\nt\nt",
		"$db: restored claims are duplicates, fresh ids are claimed");
	is(query($db, $counts), '4,3,4', "$db: one new claim per fresh id");
	my ($rc, $out, $err);
	is(query($db, $machines), query('source', $machines),
		"$db: same state machines");
	# Leases: the finished one replays its result, the running one is still held,
	# a wrong payload is still caught, and tokens keep rising past the source's.
	is( query($db,
			q{SELECT status || ' ' || result FROM inbox.acquire('api_keys', 'pay-1', '1 hour', inbox.fingerprint('{"amount": 5}'))}),
		'completed {"charge": "ch_1"}',
		"$db: a finished lease replays its stored result");
	($rc, $out, $err) = $node->psql($db,
		q{SELECT * FROM inbox.acquire('api_keys', 'pay-1', '1 hour', inbox.fingerprint('{"amount": 6}'))});
	like($err, qr/idempotency key "pay-1" was reused with a different payload/,
		"$db: the stored fingerprint still guards the key");
	is(query($db, q{SELECT status FROM inbox.acquire('api_keys', 'pay-2', '1 hour')}),
		'in_progress', "$db: a running lease is still held");
	is( query($db,
			q{SELECT token > (SELECT max(token) FROM api_keys WHERE message_id <> 'pay-3')
			    FROM inbox.acquire('api_keys', 'pay-3', '1 hour')}),
		't', "$db: new tokens are higher than every restored one");
	($rc, $out, $err) = $node->psql($db,
		q{UPDATE app.payments SET status = 'PENDING' WHERE id = 2});
	like($err, qr/illegal state transition from "PAID" to "PENDING"/,
		"$db: the restored machine refuses an illegal UPDATE");
	is( query($db,
			q{SELECT inbox.transition('app.payments', '{"id": 1}', 'status', 'PAID')}),
		'moved', "$db: transition takes its sources from the restored machine");
}

# Control: the same redeliveries against empty inboxes are all fresh, so
# the duplicates above come from the restored rows.
$node->safe_psql('postgres', 'CREATE DATABASE empty');
query('empty', q{
CREATE EXTENSION idempotent_inbox;
CREATE SCHEMA app;
SELECT inbox.create_inbox('orders_inbox');
SELECT inbox.create_inbox('app.events', 'uuid', '7 days');
SELECT inbox.create_inbox('offsets', 'bigint', '1 hour');
});
is(query('empty', $redeliveries), "t\nt\nt\nt\nt\nt\nt\nt",
	'control: without the restored claims every id is fresh');

# A machine is a trigger that uses the extension's function: DROP EXTENSION
# refuses while one exists, rather than silently dropping the guard.
my ($rc, $out, $err) = $node->psql('from_custom', 'DROP EXTENSION idempotent_inbox');
like($err, qr/cannot drop extension idempotent_inbox because other objects depend on it/,
	'DROP EXTENSION refuses while a state machine depends on it');
query('from_custom', q{SELECT inbox.unguard_transitions('app.payments', 'status')});

# Removing the extension must not take the consumer's history with it.
my $before = query('from_custom', $claims);
is( query(
		'from_custom', q{
DROP EXTENSION idempotent_inbox;
SELECT count(*) FROM pg_extension WHERE extname = 'idempotent_inbox'}),
	'0',
	'DROP EXTENSION without CASCADE succeeds');
is(query('from_custom', $claims), $before,
	'inbox tables keep their rows after DROP EXTENSION');

$node->stop;
done_testing();
