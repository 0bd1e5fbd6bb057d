
# A rebalance of one simulated Kafka partition, played with real sessions.
# Consumer A (generation 1) applies offsets out of order and is paused in the
# middle of a transaction; consumer B (generation 2) takes the partition over.
# The takeover waits for A's open transaction, whose commit counts; what A tries
# after the takeover committed is refused with 55I02.  B's two workers complete
# offsets in parallel, out of order, until a worker's backend is killed with
# SIGKILL, its effect applied but not committed, and the server goes through
# crash recovery.  The group rebalanced meanwhile: consumer C (generation 3)
# takes over; B, back, tries again while C's takeover is open, waits for it and
# is refused.  C seeks to the resume point, is redelivered an overlapping range
# as a broker would, and finishes.  Every offset's effect must be applied
# exactly once, the balances must equal the log's sums, and the partition must
# end at its last offset with no gap.

use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $messages = 200;

my $node = PostgreSQL::Test::Cluster->new('rebalance');
$node->init;
$node->append_conf('postgresql.conf', 'restart_after_crash = on');
$node->start;

$node->safe_psql(
	'postgres', qq{
CREATE EXTENSION idempotent_inbox;
SELECT inbox.create_inbox('payments_consumer');
-- The partition as the broker holds it: offset, account, amount.
CREATE TABLE log AS
    SELECT o::bigint AS "offset", (o % 3) + 1 AS account, (o % 7) + 1 AS amount
      FROM generate_series(0, $messages - 1) o;
CREATE TABLE accounts (id int PRIMARY KEY, balance bigint NOT NULL);
INSERT INTO accounts VALUES (1, 0), (2, 0), (3, 0);
-- One row per application, no key: a double shows as two rows.
CREATE TABLE ledger ("offset" bigint, generation bigint);
CREATE UNLOGGED TABLE crash_marker (x int);

-- The consumer's step for one record: claim the offset for its generation, and
-- apply the effect only when it is fresh, in the same transaction.
CREATE FUNCTION apply_one(gen bigint, o bigint) RETURNS boolean LANGUAGE plpgsql AS \$\$
BEGIN
    IF NOT inbox.claim_offset('payments_consumer', 'payments', 0, o, generation => gen) THEN
        RETURN false;
    END IF;
    INSERT INTO ledger VALUES (o, gen);
    UPDATE accounts a SET balance = a.balance + l.amount FROM log l
     WHERE l."offset" = o AND a.id = l.account;
    RETURN true;
END \$\$;

-- A worker's loop: each record in its own transaction, committed before the
-- next (the broker's acknowledgement would follow each COMMIT).
CREATE PROCEDURE consume(gen bigint, offsets bigint[]) LANGUAGE plpgsql AS \$\$
DECLARE o bigint;
BEGIN
    FOREACH o IN ARRAY offsets LOOP
        PERFORM apply_one(gen, o);
        COMMIT;
    END LOOP;
END \$\$;

-- A zombie's attempt: the error's SQLSTATE, message and detail, or 'ok'.
CREATE FUNCTION attempt(gen bigint, o bigint) RETURNS text LANGUAGE plpgsql AS \$\$
DECLARE msg text; detail text;
BEGIN
    PERFORM apply_one(gen, o);
    RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS msg = MESSAGE_TEXT, detail = PG_EXCEPTION_DETAIL;
    RETURN SQLSTATE || ': ' || msg || ' / ' || detail;
END \$\$;
});

sub query { return $node->safe_psql('postgres', $_[0]); }

# Offsets $from..$to with neighbours swapped (1, 0, 3, 2, ...): out of order.
sub swapped
{
	my ($from, $to) = @_;
	my @o;
	for (my $i = $from; $i <= $to; $i += 2)
	{
		push @o, $i + 1 <= $to ? ($i + 1, $i) : ($i);
	}
	return @o;
}

sub array_of { return 'ARRAY[' . join(',', @_) . ']::bigint[]'; }

# Is the backend $pid waiting for a lock?
sub waits_for_lock
{
	my ($pid) = @_;
	return $node->poll_query_until('postgres',
		"SELECT wait_event_type = 'Lock' FROM pg_stat_activity WHERE pid = $pid");
}

my $refused = 0;
my $stale = qr/^55I02: partition 0 of topic "payments" of inbox "payments_consumer" belongs to generation (\d+) \/ The caller's generation is (\d+)\.$/;

# Consumer A, generation 1: offsets 0..49 out of order, then 50 left open.
my $a = $node->background_psql('postgres', on_error_stop => 0);
is($a->query_safe('SELECT inbox.fence(\'payments_consumer\', \'payments\', 0, 1)'),
	't', 'A takes the new partition with generation 1');
$a->query_safe('CALL consume(1, ' . array_of(swapped(0, 49)) . ')');
is(query("SELECT inbox.position('payments_consumer', 'payments', 0)"), '49',
	'A applied 0..49 out of order: the watermark is 49');
$a->query_safe('BEGIN');
is($a->query_safe('SELECT apply_one(1, 50)'), 't', 'A applies 50 and pauses before COMMIT');

# The rebalance: B, generation 2, takes the partition over.  Its takeover waits
# for A's open transaction.
my $b1 = $node->background_psql('postgres', on_error_stop => 0);
my $b1_pid = $b1->query_safe('SELECT pg_backend_pid()');
$b1->query_until(qr/takeover/,
	"\\echo takeover\nSELECT inbox.fence('payments_consumer', 'payments', 0, 2);\n");
ok(waits_for_lock($b1_pid), 'B\'s takeover waits for A\'s transaction under way');
$a->query_safe('COMMIT');
$b1->query_until(qr/^t$/m, '');
pass('A\'s commit lands before the takeover, and the takeover goes on');

# A resumes after the takeover committed: refused before any effect.
my $answer = $a->query_safe('SELECT attempt(1, 51)');
like($answer, $stale, 'A\'s next record is refused with 55I02');
my ($owner, $caller) = $answer =~ $stale;
is("$owner/$caller", '2/1', 'the error names both generations');
$refused++;

my $b2 = $node->background_psql('postgres', on_error_stop => 0);
is($b2->query_safe('SELECT apply_one(2, 51)'), 't', 'B applies 51');

# B seeks where the database says: after 51.
is(query(q{SELECT "offset" || '|' || seek_to || '|' || generation || '|' || completed::text
             FROM inbox.resume_points('payments_consumer', 'payments')}),
	'51|52|2|{}', 'B\'s resume point: watermark 51, seek to 52, generation 2');

# B's two workers, in parallel, each out of order: odd and even offsets of
# 52..139, then the redelivered 40..60 (all applied already).
my (@odd, @even);
foreach my $o (swapped(52, 139)) { push @{ $o % 2 ? \@odd : \@even }, $o; }
$b1->query_until(qr/b1 go/, "\\echo b1 go\nCALL consume(2, " . array_of(@odd, 40 .. 60) . ");\n\\echo b1 done\n");
$b2->query_until(qr/b2 go/, "\\echo b2 go\nCALL consume(2, " . array_of(reverse @even) . ");\n\\echo b2 done\n");
$b1->query_until(qr/b1 done/, '');
$b2->query_until(qr/b2 done/, '');
is(query("SELECT inbox.position('payments_consumer', 'payments', 0)"), '139',
	'B\'s workers applied 52..139 in parallel and out of order: watermark 139');

# B completes 141 and 142 (a gap at 140), then has 140's effect applied but not
# committed when the server is killed.
$b1->query_safe('SELECT apply_one(2, 142)');
$b1->query_safe('SELECT apply_one(2, 141)');
is(query(q{SELECT "offset" || '|' || completed_above || '|' || gaps FROM inbox.streams}),
	'139|2|1', 'offsets 141 and 142 wait above the watermark, one gap');
my $b2_pid = $b2->query_safe('SELECT pg_backend_pid()');
$b2->query_safe('BEGIN');
is($b2->query_safe('SELECT apply_one(2, 140)'), 't', 'B applies 140, not committed');
query('INSERT INTO crash_marker VALUES (1)');
# SIGKILL of a backend: the postmaster kills every other one and recovers, as
# after any crash of the server.
kill 'KILL', $b2_pid;
$a->quit;
$b1->quit;
$b2->quit;
ok($node->poll_query_until('postgres', 'SELECT count(*) = 0 FROM crash_marker'),
	'the server went through crash recovery');

is(query(q{SELECT "offset" || '|' || seek_to || '|' || generation || '|' || completed::text
             FROM inbox.resume_points('payments_consumer', 'payments')}),
	'139|140|2|{141,142}', 'after the crash: 140 was lost with its effect, 141 and 142 kept');

# The group rebalanced while B was down: C has generation 3 and is redelivered
# from before the resume point, in two parallel workers.
# C's takeover is open when B, back after the crash, tries again: B waits for
# it, and is refused once C commits.
my $c1 = $node->background_psql('postgres', on_error_stop => 0);
my $c2 = $node->background_psql('postgres', on_error_stop => 0);
my $zombie = $node->background_psql('postgres', on_error_stop => 0);
my $zombie_pid = $zombie->query_safe('SELECT pg_backend_pid()');
$c1->query_safe('BEGIN');
is($c1->query_safe("SELECT inbox.fence('payments_consumer', 'payments', 0, 3)"), 't',
	'C takes the partition over with generation 3');
$zombie->query_until(qr/zombie/, "\\echo zombie\nSELECT attempt(2, 143);\n");
ok(waits_for_lock($zombie_pid), 'B\'s attempt waits for C\'s open takeover');
$c1->query_safe('COMMIT');
$zombie->query_until(qr/55I02: partition 0/, '');
pass('B\'s attempt is refused once C commits');
$refused++;
like($zombie->query_safe('SELECT attempt(2, 144)'), $stale, 'and so is the next one');
$refused++;
$zombie->quit;
my (@c1, @c2);
foreach my $o (swapped(120, $messages - 1)) { push @{ $o % 3 ? \@c1 : \@c2 }, $o; }
$c1->query_until(qr/c1 go/, "\\echo c1 go\nCALL consume(3, " . array_of(@c1) . ");\n\\echo c1 done\n");
$c2->query_until(qr/c2 go/, "\\echo c2 go\nCALL consume(3, " . array_of(reverse @c2) . ");\n\\echo c2 done\n");
$c1->query_until(qr/c1 done/, '');
$c2->query_until(qr/c2 done/, '');
$c1->quit;
$c2->quit;

# Exactly once, and the right end.
is(query('SELECT count(*) || \'|\' || count(DISTINCT "offset") FROM ledger'),
	"$messages|$messages", 'every offset applied exactly once');
is(query('SELECT count(*) FROM log l WHERE NOT EXISTS (SELECT FROM ledger g WHERE g."offset" = l."offset")'),
	'0', 'no offset lost');
is( query(q{SELECT string_agg(a.balance::text, ',' ORDER BY a.id) FROM accounts a}),
	query(q{SELECT string_agg(s::text, ',' ORDER BY account) FROM (SELECT account, sum(amount) s FROM log GROUP BY account) x}),
	'the balances are the sums of the log');
is( query(q{SELECT string_agg("offset" || ':' || generation, ',' ORDER BY "offset")
               FROM ledger WHERE "offset" BETWEEN 140 AND 143}),
	'140:3,141:2,142:2,143:3', 'what B lost in the crash C applied; what B committed stayed B\'s');
is(query(q{SELECT "offset" || '|' || generation || '|' || completed::text
             FROM inbox.resume_points('payments_consumer', 'payments')}),
	($messages - 1) . '|3|{}', 'the partition ends at its last offset, generation 3, no gap');
is(query(q{SELECT gaps FROM inbox.streams}), '0', 'inbox.streams shows no gap');
cmp_ok($refused, '==', 3, 'every zombie attempt was refused');
is(query('SELECT count(*) FROM ledger WHERE generation = 2 AND "offset" >= 143'), '0',
	'no zombie effect after the takeovers');

$node->stop;
done_testing();
