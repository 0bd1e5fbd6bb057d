
# Logical replication.  An inbox is an ordinary table, so it can be published
# with the tables its claims protect: the subscriber, with the same inbox made
# by create_inbox, receives claims and effects in the same transactions and
# answers a redelivery of a message claimed on the publisher as a duplicate
# once it has caught up.  Before it has, it does not know the claim (as any
# asynchronous replica), and a claim made on both sides stops the
# subscription.
#
# dedup_trigger on a subscriber table: the apply worker runs with
# session_replication_role = replica, so the trigger deduplicates replicated
# rows only when enabled ALWAYS or REPLICA; with the default enablement it does
# not fire for them.

use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use Payments;

my $publisher = PostgreSQL::Test::Cluster->new('publisher');
$publisher->init(allows_streaming => 'logical');
$publisher->start;

my $subscriber = PostgreSQL::Test::Cluster->new('subscriber');
$subscriber->init;
$subscriber->start;

sub pub { return $publisher->safe_psql('postgres', $_[0]); }
sub sub_ { return $subscriber->safe_psql('postgres', $_[0]); }

# The same tables on both sides; the inboxes made by create_inbox on each, so
# that each registry knows them.  events is a sink fed only by replication on
# the subscriber, where a dedup_trigger guards it.
my $tables = q{
CREATE EXTENSION idempotent_inbox;
SELECT inbox.create_inbox('payments');
CREATE TABLE accounts (id int PRIMARY KEY, balance bigint NOT NULL);
CREATE TABLE ledger (message_id text PRIMARY KEY, amount int);
CREATE TABLE events (seq bigint PRIMARY KEY, event_id text NOT NULL, payload text);
};
pub($tables);
sub_($tables);
sub_(q{
SELECT inbox.create_inbox('events_seen');
CREATE TRIGGER dedup BEFORE INSERT ON events
  FOR EACH ROW EXECUTE FUNCTION inbox.dedup_trigger('events_seen', 'event_id');
});

pub(q{
INSERT INTO accounts VALUES (1, 0);
CREATE PUBLICATION pub FOR TABLE payments, accounts, ledger, events;
});

# Claimed before the subscription exists: copied by the initial sync.
pub(deliver_sql($_)) foreach 1 .. 5;

sub_("CREATE SUBSCRIPTION sub CONNECTION '"
	  . $publisher->connstr . ' dbname=postgres'
	  . "' PUBLICATION pub");
$subscriber->poll_query_until('postgres',
	q{SELECT count(*) = 0 FROM pg_subscription_rel WHERE srsubstate NOT IN ('r', 's')})
  or die 'the initial sync did not finish';
$publisher->wait_for_catchup('sub');

# Claimed after: streamed.
pub(deliver_sql($_)) foreach 6 .. 8;
$publisher->wait_for_catchup('sub');

is(sub_("SELECT count(*) FROM inbox.inboxes WHERE inbox = 'payments'::regclass"),
	1, 'subscriber: its registry knows the inbox');
is(sub_('SELECT count(*) FROM payments'), 8, 'subscriber: every claim arrived');

# The consumer moves to the subscriber and the broker redelivers.
is_deeply(
	[ split /\n/, sub_(join(";\n", map { deliver_sql($_) } 1 .. 9)) ],
	[ (('duplicate') x 8), 'applied' ],
	'subscriber: messages claimed on the publisher are duplicates, a new one is applied');
is(sub_('SELECT balance FROM accounts WHERE id = 1'),
	sum_of(1 .. 9), 'subscriber: the balance counts every message once');

# ---------------------------------------------------------------------------
# dedup_trigger on the subscriber's sink.
# ---------------------------------------------------------------------------

sub events_on_subscriber
{
	return sub_(
		q{SELECT string_agg(event_id, ',' ORDER BY seq) FROM events WHERE event_id LIKE 'e%'});
}

sub seen_on_subscriber
{
	return sub_(
		q{SELECT coalesce(string_agg(message_id, ',' ORDER BY message_id), '') FROM events_seen
		   WHERE message_id LIKE 'e%'});
}

# Default enablement (ORIGIN): the apply worker does not fire the trigger.
pub(q{INSERT INTO events VALUES (1, 'e1', 'a'), (2, 'e2', 'b'), (3, 'e1', 'a again')});
$publisher->wait_for_catchup('sub');
is(events_on_subscriber(), 'e1,e2,e1',
	'default enablement: replicated rows pass undeduplicated');
is(seen_on_subscriber(), '', 'default enablement: the trigger claimed nothing');
sub_(q{INSERT INTO events VALUES (1001, 'local-1', 'x'), (1002, 'local-1', 'x')});
is(sub_(q{SELECT count(*) FROM events WHERE event_id = 'local-1'}),
	1, 'default enablement: the trigger does fire for local inserts');

# ENABLE ALWAYS: replicated rows are deduplicated, against each other, across
# transactions, and against local inserts.
sub_('ALTER TABLE events ENABLE ALWAYS TRIGGER dedup');
pub(q{INSERT INTO events VALUES (10, 'e10', 'a'), (11, 'e11', 'b'), (12, 'e10', 'a'),
                                (13, 'e12', 'c'), (14, 'e11', 'b')});
pub(q{INSERT INTO events VALUES (15, 'e10', 'a once more'), (16, 'e13', 'd')});
$publisher->wait_for_catchup('sub');
is( sub_(q{SELECT string_agg(event_id, ',' ORDER BY seq) FROM events WHERE seq >= 10 AND seq < 1000}),
	'e10,e11,e12,e13',
	'ENABLE ALWAYS: each replicated id is kept once');
is(seen_on_subscriber(), 'e10,e11,e12,e13', 'ENABLE ALWAYS: the trigger claimed them');
sub_(q{INSERT INTO events VALUES (1003, 'e12', 'local copy'), (1004, 'local-2', 'y'), (1005, 'local-2', 'y')});
is( sub_(q{SELECT string_agg(event_id, ',' ORDER BY seq) FROM events WHERE seq > 1002}),
	'local-2',
	'ENABLE ALWAYS: local inserts are deduplicated too, against replicated ids');

# ENABLE REPLICA: only the apply worker fires it.
sub_('ALTER TABLE events ENABLE REPLICA TRIGGER dedup');
pub(q{INSERT INTO events VALUES (20, 'e20', 'a'), (21, 'e20', 'a'), (22, 'e13', 'seen')});
$publisher->wait_for_catchup('sub');
is( sub_(q{SELECT string_agg(event_id, ',' ORDER BY seq) FROM events WHERE seq >= 20 AND seq < 1000}),
	'e20',
	'ENABLE REPLICA: replicated rows are deduplicated');
sub_(q{INSERT INTO events VALUES (1006, 'local-3', 'z'), (1007, 'local-3', 'z')});
is(sub_(q{SELECT count(*) FROM events WHERE event_id = 'local-3'}),
	2, 'ENABLE REPLICA: local inserts are not');

# The trigger's inbox must not be replicated as well: where the publisher
# deduplicates its own sink with a trigger and publishes the inbox too, each
# replicated transaction brings the claim first and the row after it, and a
# subscriber trigger enabled ALWAYS finds every row already claimed and drops
# it, silently.
my $twin = q{
SELECT inbox.create_inbox('sink_seen');
CREATE TABLE sink (event_id text PRIMARY KEY, payload text);
CREATE TRIGGER dedup BEFORE INSERT ON sink
  FOR EACH ROW EXECUTE FUNCTION inbox.dedup_trigger('sink_seen', 'event_id');
};
pub($twin);
sub_($twin . 'ALTER TABLE sink ENABLE ALWAYS TRIGGER dedup;');
pub('ALTER PUBLICATION pub ADD TABLE sink, sink_seen');
sub_('ALTER SUBSCRIPTION sub REFRESH PUBLICATION');
$subscriber->poll_query_until('postgres',
	q{SELECT count(*) = 0 FROM pg_subscription_rel WHERE srsubstate NOT IN ('r', 's')})
  or die 'the sync of the new tables did not finish';
pub(q{INSERT INTO sink VALUES ('s1', 'a'), ('s2', 'b'), ('s1', 'a')});
$publisher->wait_for_catchup('sub');
is(pub('SELECT count(*) FROM sink'), 2, 'replicated inbox: the publisher keeps s1 and s2');
is( sub_('SELECT count(*) || \'/\' || (SELECT count(*) FROM sink_seen) FROM sink'),
	'0/2',
	'replicated inbox: the subscriber has both claims and drops every row');

ok(!$subscriber->log_contains(qr/ERROR/), 'subscriber: the apply worker met no error');

# ---------------------------------------------------------------------------
# Before it has caught up, the subscriber does not know the publisher's
# latest claims; a claim made on both sides then stops the subscription.
# ---------------------------------------------------------------------------

sub_('ALTER SUBSCRIPTION sub DISABLE');
$subscriber->poll_query_until('postgres',
	q{SELECT count(*) = 0 FROM pg_stat_subscription WHERE subname = 'sub' AND pid IS NOT NULL})
  or die 'the apply worker did not stop';
is(pub(deliver_sql(10)), 'applied', 'lagging: m10 applied on the publisher');
is(sub_(deliver_sql(10)), 'applied',
	'lagging: the subscriber, behind, applies m10 again');
my $log_offset = -s $subscriber->logfile;
sub_('ALTER SUBSCRIPTION sub ENABLE');
ok( $subscriber->wait_for_log(
		# 18 reports the conflict in its own words
		qr/duplicate key value violates unique constraint "payments_pkey"|conflict detected on relation "public.payments": conflict=insert_exists/,
		$log_offset),
	'lagging: the publisher\'s claim of m10 then conflicts with the subscriber\'s and replication stops');

sub_('DROP SUBSCRIPTION sub');
$subscriber->stop;
$publisher->stop;
done_testing();
