
# A lease holder dies while its outside call is running.  A session-bound
# lease names its backend, so once that backend is gone the next acquire
# takes over at once, with a higher token that fences the dead holder out:
# whether the backend was killed (the cluster restarts) or disconnected.  A
# lease that is not session-bound has only its time to go by, so the same
# death leaves it in progress.

use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('lease_holder_killed');
$node->init;
# The test framework turns this off; a killed backend must make the
# postmaster reinitialise, as it does in production.
$node->append_conf('postgresql.conf', 'restart_after_crash = on');
$node->start;

$node->safe_psql(
	'postgres', q{
CREATE EXTENSION idempotent_inbox;
SELECT inbox.create_inbox('charges');
-- Unlogged tables are emptied by crash recovery: a row here that has
-- disappeared proves the crash-restart cycle is over.
CREATE UNLOGGED TABLE crash_marker (x int);
-- The SQLSTATE a statement fails with, or 'ok'.
CREATE FUNCTION sqlstate_of(statement text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE statement;
    RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE;
END $$;
});

sub query { return $node->safe_psql('postgres', $_[0]); }

# Each acquire is its own transaction, committed before the outside call.
sub acquire_sql
{
	my ($key, $session_bound) = @_;
	return "SELECT status || '|' || coalesce(token::text, '') "
	  . "|| '|' || coalesce(result::text, '') "
	  . "FROM inbox.acquire('charges', '$key', '1 hour', "
	  . "session_bound => $session_bound)";
}

sub acquire { return query(acquire_sql(@_)); }

sub finish_sqlstate
{
	my ($key, $token, $result) = @_;
	return query("SELECT sqlstate_of(\$\$SELECT inbox.finish('charges', '$key', "
		  . "$token, '$result')\$\$)");
}

# The answer of acquire, checked for its status; returns the token.
sub expect_acquired
{
	my ($answer, $what) = @_;
	like($answer, qr/^acquired\|\d+\|$/, $what);
	return (split /\|/, $answer)[1];
}

# A holder that acquires and then "calls out": it stays connected and idle.
my $holder = $node->background_psql('postgres', on_error_stop => 0);
my $holder_pid = $holder->query_safe('SELECT pg_backend_pid()');
my $bound_token =
  expect_acquired($holder->query_safe(acquire_sql('card-1', 'true')),
	'the holder acquires a session-bound lease');
expect_acquired($holder->query_safe(acquire_sql('card-2', 'false')),
	'the holder acquires a lease bound only by time');

is(acquire('card-1', 'true'), 'in_progress||',
	'a retry while the session-bound holder lives is in_progress');
is(acquire('card-2', 'false'), 'in_progress||',
	'a retry while the timed holder lives is in_progress');

query('INSERT INTO crash_marker VALUES (1)');
kill 'KILL', $holder_pid;
# psql notices nothing until it talks to the server; let it go.
$holder->quit;
ok($node->poll_query_until('postgres', 'SELECT count(*) = 0 FROM crash_marker'),
	'the server went through crash recovery');

# The lease row survived the crash (it was committed), but its holder did not.
my $takeover_token = expect_acquired(acquire('card-1', 'true'),
	'after the kill, a retry takes the session-bound lease over at once');
cmp_ok($takeover_token, '>', $bound_token,
	'the takeover token is higher than the dead holder\'s');
is(finish_sqlstate('card-1', $bound_token, '{"charge": "dead"}'),
	'55I01', 'the dead holder\'s token can no longer finish');
is(finish_sqlstate('card-1', $takeover_token, '{"charge": "ch_1"}'),
	'ok', 'the new holder finishes');
is(acquire('card-1', 'true'),
	"completed|$takeover_token|{\"charge\": \"ch_1\"}",
	'a further retry is completed with the new holder\'s result');
is(finish_sqlstate('card-1', $bound_token, '{"charge": "dead"}'),
	'55I01', 'the dead holder\'s token cannot overwrite the completed result');
is(query("SELECT inbox.result('charges', 'card-1')"),
	'{"charge": "ch_1"}', 'the stored result is the new holder\'s');

# Without session_bound, a dead holder looks like a slow one.
is(acquire('card-2', 'false'), 'in_progress||',
	'a timed lease whose holder was killed stays in_progress until its time is up');

# A holder that disconnects normally, for instance after its client crashed.
my $quitter = $node->background_psql('postgres', on_error_stop => 0);
my $quitter_pid = $quitter->query_safe('SELECT pg_backend_pid()');
my $quitter_token =
  expect_acquired($quitter->query_safe(acquire_sql('card-3', 'true')),
	'a second holder acquires a session-bound lease');
is(acquire('card-3', 'true'), 'in_progress||',
	'a retry while the second holder is connected is in_progress');
$quitter->quit;
# The backend ends a moment after psql; no lease time needs to pass.
ok( $node->poll_query_until(
		'postgres',
		"SELECT count(*) = 0 FROM pg_stat_activity WHERE pid = $quitter_pid"),
	'the second holder\'s backend is gone');
my $next_token = expect_acquired(acquire('card-3', 'true'),
	'a lease whose holder disconnected is taken over at once');
cmp_ok($next_token, '>', $quitter_token, 'with a higher token');
is(finish_sqlstate('card-3', $quitter_token, '{"charge": "gone"}'),
	'55I01', 'the disconnected holder\'s token is fenced off');

is(query('SELECT takeovers IS NULL FROM inbox.stats'),
	't', 'without preloading there are no live counters');

$node->stop;
done_testing();
