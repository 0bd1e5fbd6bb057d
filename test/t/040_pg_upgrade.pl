
# pg_upgrade keeps every promise the extension made before it.  An "old" cluster gets
# inboxes of each key type (text, uuid, bigint) holding plain claims, completed keys
# with stored results, fingerprinted claims, leases (finished, live, taken over,
# session-bound, released), retention windows, stream positions, a state machine and
# a dedup_trigger; a second database keeps version 0.1 of the extension.  pg_upgrade
# moves the cluster into a "new" one, where redeliveries of every claimed id are still
# duplicates, stored results replay, stale lease tokens are still refused and new
# tokens are higher than any handed out before, positions, machines, retention
# windows and the trigger still hold, inbox.stats answers, and ALTER EXTENSION ...
# UPDATE brings the 0.1 database to the newest version with its claims intact.
#
# The old cluster runs the install named by INBOX_UPGRADE_OLD_INSTALL (a directory
# with bin/ and lib/, as PostgreSQL::Test::Cluster's install_path expects, holding
# this extension), so that a newer server's run upgrades from PostgreSQL 15.  Unset,
# the old cluster uses the same install as the new one: pg_upgrade between two
# clusters of one major version still dumps and restores the schema and carries the
# data files over as binaries, which is what could lose a claim.
#
# Both clusters preload the library with the purge worker waking every second: it
# must keep out of the way of the servers pg_upgrade starts in binary-upgrade mode.

use strict;
use warnings;
use Cwd;
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $old_install = $ENV{INBOX_UPGRADE_OLD_INSTALL};
$old_install = undef if defined $old_install && $old_install eq '';

my $old = PostgreSQL::Test::Cluster->new('old',
	defined $old_install ? (install_path => $old_install) : ());
my $new = PostgreSQL::Test::Cluster->new('new');

# Checksums on both (the default from PostgreSQL 18 on, an option before) and one
# locale and encoding, so that pg_upgrade of any pair of versions finds them equal.
my @initdb = ('--data-checksums', '--locale=C', '--encoding=UTF8');
my $conf = qq{
shared_preload_libraries = 'idempotent_inbox'
idempotent_inbox.purge_interval = 1
};
$old->init(extra => [@initdb]);
$old->append_conf('postgresql.conf', $conf);
$old->start;
$new->init(extra => [@initdb]);

# A minor release may stamp columns with options that only releases made after it
# know (Debian's 15.20 and 17.12 write pg_attver; 18.6 and 19rc1, older, refuse it):
# pg_upgrade then fails on the first table, whatever it holds.  Such a pair cannot be
# tested; upgrade from the same install instead and say so.
if (defined $old_install)
{
	my $stamps = $old->safe_psql('postgres', q{
BEGIN;
CREATE TEMP TABLE probe (a int);
SELECT option_name FROM pg_attribute, pg_options_to_table(attoptions)
 WHERE attrelid = 'probe'::regclass AND attnum = 1;
ROLLBACK;});
	$new->start;
	my @unknown;
	for my $option (grep { length } split /\n/, $stamps)
	{
		my ($ret) = $new->psql('postgres', qq{
BEGIN;
CREATE TEMP TABLE probe (a int);
ALTER TABLE probe ALTER COLUMN a SET ($option = 1);
ROLLBACK;});
		push @unknown, $option if $ret != 0;
	}
	$new->stop;
	if (@unknown)
	{
		my $old_num = $old->safe_psql('postgres', 'SHOW server_version_num');
		diag "PostgreSQL $old_num stamps columns with "
		  . join(', ', @unknown)
		  . ", which this newer major's release does not know: it predates the old"
		  . " one's minor release, and pg_upgrade between the two fails on any table."
		  . " Upgrading from the same install instead.";
		$old->stop;
		$old = PostgreSQL::Test::Cluster->new('old_same');
		$old->init(extra => [@initdb]);
		$old->append_conf('postgresql.conf', $conf);
		$old->start;
		$old_install = undef;
	}
}

my $old_version = $old->safe_psql('postgres', 'SELECT version()');
my $old_num = $old->safe_psql('postgres', 'SHOW server_version_num');
note "old cluster: $old_version";

# Each key type: an inbox, and the id of message number g as an SQL expression.
my %keys = (
	text => { inbox => 'app.msgs_text', id => sub { "('m-' || ($_[0]))" } },
	uuid => { inbox => 'app.msgs_uuid', id => sub { "md5('m-' || ($_[0]))::uuid" } },
	bigint => { inbox => 'app.msgs_bigint', id => sub { "($_[0])::bigint" } },
);
my @types = qw(text uuid bigint);

# Setup as the superuser: an application role that owns the inboxes and may change
# their retention (not granted to PUBLIC).
$old->safe_psql(
	'postgres', q{
CREATE EXTENSION idempotent_inbox;
CREATE ROLE app LOGIN;
CREATE SCHEMA app AUTHORIZATION app;
GRANT EXECUTE ON FUNCTION inbox.set_retention(regclass, interval) TO app;
SET ROLE app;
SELECT inbox.create_inbox('app.msgs_text', 'text', '30 days');
SELECT inbox.create_inbox('app.msgs_uuid', 'uuid');
SELECT inbox.create_inbox('app.msgs_bigint', 'bigint');
SELECT inbox.set_retention('app.msgs_uuid', '7 days');
CREATE TABLE app.effects (inbox text, message_id text);
});

# Fencing tokens handed out in the old cluster; every later one must be higher.
my %token;
my $max_token = 0;

sub acquire
{
	my ($node, $sql) = @_;
	my ($status, $tok) = split /\|/, $node->safe_psql('postgres', "SET ROLE app; $sql");
	$max_token = $tok if defined $tok && $tok ne '' && $tok > $max_token;
	return ($status, $tok);
}

for my $t (@types)
{
	my ($ib, $id) = ($keys{$t}{inbox}, $keys{$t}{id});
	my $ids = 'ARRAY(SELECT ' . $id->('g') . ' FROM generate_series(1, 1000) g)';
	is( $old->safe_psql(
			'postgres', qq{
SET ROLE app;
SELECT count(*) FROM inbox.claim_many('$ib', $ids);
}),
		'1000',
		"$t: 1000 plain claims");

	$old->safe_psql(
		'postgres', qq{
SET ROLE app;
BEGIN;
SELECT inbox.claim('$ib', @{[ $id->(2001) ]});
SELECT inbox.complete('$ib', @{[ $id->(2001) ]}, '{"n": 2001}');
COMMIT;
SELECT inbox.claim_apply('$ib', @{[ $id->(2002) ]},
                         'INSERT INTO app.effects VALUES (\$1, \$2)', '$t', '2002');
SELECT inbox.claim('$ib', @{[ $id->(3001) ]}, inbox.fingerprint('{"amount": 1}'));
});

	# Leases: finished with a result, live, taken over, session-bound, released.
	my $acq = sub {
		my ($g, $lease, $extra) = @_;
		$extra //= '';
		return acquire($old,
			"SELECT status, token FROM inbox.acquire('$ib', "
			  . $id->($g)
			  . ", '$lease'$extra)");
	};
	my ($s, $tok);
	($s, $token{$t}{finished}) = $acq->(4001, '1 hour');
	$old->safe_psql('postgres',
		    "SET ROLE app; SELECT inbox.finish('$ib', "
		  . $id->(4001)
		  . ", $token{$t}{finished}, '{\"charge\": \"ch_4001\"}')");
	($s, $token{$t}{live}) =
	  $acq->(4002, '1 day', q{, inbox.fingerprint('{"amount": 2}')});
	($s, $token{$t}{stale}) = $acq->(4003, '1 millisecond');
	$old->safe_psql('postgres', 'SELECT pg_sleep(0.01)');
	($s, $token{$t}{over}) = $acq->(4003, '1 day');
	is($s, 'acquired', "$t: an expired lease is taken over before the upgrade");
	($s, $token{$t}{session}) = $acq->(4004, '1 day', ', session_bound => true');
	($s, $token{$t}{released}) = $acq->(4005, '1 day');
	$old->safe_psql('postgres',
		    "SET ROLE app; SELECT inbox.release('$ib', "
		  . $id->(4005)
		  . ", $token{$t}{released})");
}

# Streams, a state machine, a dedup_trigger.
$old->safe_psql(
	'postgres', q{
SET ROLE app;
SELECT inbox.advance('app.msgs_bigint', 'orders', p, 100 * (p + 1)) FROM generate_series(0, 2) p;
SELECT inbox.advance('app.msgs_text', 'audit', 0, 7);
CREATE TABLE app.payments (id bigint PRIMARY KEY, status text NOT NULL DEFAULT 'PENDING');
SELECT inbox.guard_transitions('app.payments', 'status',
       '{"PENDING": ["PAID", "CANCELLED"], "PAID": ["SHIPPED"]}');
INSERT INTO app.payments (id) SELECT generate_series(1, 3);
SELECT inbox.transition('app.payments', '{"id": 1}', 'status', 'PAID');
SELECT inbox.transition('app.payments', '{"id": 2}', 'status', 'PAID');
SELECT inbox.transition('app.payments', '{"id": 2}', 'status', 'SHIPPED');
SELECT inbox.create_inbox('app.sink_seen', 'uuid');
CREATE TABLE app.sink (event_id uuid, body text);
CREATE TRIGGER dedup BEFORE INSERT ON app.sink
    FOR EACH ROW EXECUTE FUNCTION inbox.dedup_trigger('app.sink_seen', 'event_id');
INSERT INTO app.sink SELECT md5('e-' || g)::uuid, 'first' FROM generate_series(1, 50) g;
INSERT INTO app.sink SELECT md5('e-' || g)::uuid, 'again' FROM generate_series(1, 50) g;
});
is($old->safe_psql('postgres', 'SELECT count(*) FROM app.sink'),
	'50', 'dedup_trigger drops redelivered rows before the upgrade');

# A database that stays at 0.1 until after the upgrade, when the old install has it.
my $has_01 = $old->safe_psql('postgres',
	q{SELECT count(*) FROM pg_available_extension_versions
	   WHERE name = 'idempotent_inbox' AND version = '0.1'});
if ($has_01)
{
	$old->safe_psql('postgres', 'CREATE DATABASE legacy');
	$old->safe_psql(
		'legacy', q{
CREATE EXTENSION idempotent_inbox VERSION '0.1';
SELECT inbox.create_inbox('public.legacy_msgs', 'bigint', '30 days');
SELECT count(*) FROM inbox.claim_many('public.legacy_msgs', ARRAY(SELECT generate_series(1, 100)::bigint));
SELECT inbox.advance('public.legacy_msgs', 'legacy', 0, 41);
});
}

# What must come through unchanged, compared whole: every inbox row, the registry,
# the positions, the machines, the extension's version, the oldest claims.
my %snapshot = (
	map({
			my $ib = $keys{$_}{inbox};
			(   "rows of $ib" =>
				  "SELECT md5(string_agg(t::text, ',' ORDER BY message_id)), count(*) FROM $ib t")
		} @types),
	'rows of app.sink_seen' =>
	  q{SELECT md5(string_agg(t::text, ',' ORDER BY message_id)), count(*) FROM app.sink_seen t},
	'inbox.inboxes' =>
	  q{SELECT inbox, key_type, retention, created_at FROM inbox.inboxes ORDER BY inbox::text},
	'inbox.streams' =>
	  q{SELECT inbox, topic, partition, "offset", advanced_at FROM inbox.streams ORDER BY inbox::text, topic, partition},
	'inbox.state_machines' =>
	  q{SELECT target, state_column, edges FROM inbox.state_machines ORDER BY target::text, state_column},
	'oldest claims in inbox.stats' =>
	  q{SELECT inbox, oldest_claim FROM inbox.stats ORDER BY inbox::text},
	'extension version and configuration tables' =>
	  q{SELECT extversion, extconfig::regclass[], extcondition FROM pg_extension
	     WHERE extname = 'idempotent_inbox'},
	'lease token sequence' => q{SELECT last_value, is_called FROM inbox.lease_tokens},
	# Fingerprints stored by the old server must match those the new one computes.
	'fingerprints' => q{SELECT d, inbox.fingerprint(d::jsonb) FROM (VALUES
	    ('{"amount": 1}'), ('{"amount": 1.50, "card": "tok_\u00e9", "items": [1, {"b": 2, "a": 1e2}]}'),
	    ('[0.000001, -0.0, 1e-20, 12345678901234567890, "\ud83d\ude00", null, true]')) v(d)},
	'payments' => q{SELECT * FROM app.payments ORDER BY id},
	'sink' => q{SELECT count(*), count(DISTINCT event_id) FROM app.sink},
	'index on claimed_at' =>
	  q{SELECT indrelid::regclass, indexrelid::regclass FROM pg_index
	     WHERE indrelid IN (SELECT relid FROM inbox.registry) AND NOT indisprimary ORDER BY indrelid::regclass::text});
my %before = map { $_ => $old->safe_psql('postgres', $snapshot{$_}) } keys %snapshot;
my $legacy_before = $has_01
  ? $old->safe_psql('legacy',
	q{SELECT count(*), max(message_id) FROM legacy_msgs UNION ALL
	  SELECT "offset", NULL FROM inbox.positions})
  : '';

$old->stop;

# The upgrade.
$new->append_conf('postgresql.conf', $conf);

my $old_bindir = $old->config_data('--bindir');
my $new_bindir = $new->config_data('--bindir');
my $outdir = PostgreSQL::Test::Utils::tempdir;
my $cwd = getcwd();
# pg_upgrade before 15 writes its files into the current directory.
chdir $outdir or die "could not chdir to $outdir: $!";
my ($upgrade_out, $upgrade_err) = ('', '');
my $upgraded = IPC::Run::run(
	[
		# Copy mode is the default (--copy itself appeared in 16).
		"$new_bindir/pg_upgrade", '--no-sync',
		'--old-bindir' => $old_bindir,
		'--new-bindir' => $new_bindir,
		'--old-datadir' => $old->data_dir,
		'--new-datadir' => $new->data_dir,
		'--old-port' => $old->port,
		'--new-port' => $new->port,
		'--socketdir' => $new->host,
	],
	'>' => \$upgrade_out,
	'2>' => \$upgrade_err);
chdir $cwd or die "could not chdir to $cwd: $!";
note $upgrade_out;
ok($upgraded, 'pg_upgrade succeeds');
if (!$upgraded)
{
	# Say why, with the lists of objects it refused (*.txt) and the end of each of
	# its logs, which it leaves behind on failure; then stop here (not BAIL_OUT, so
	# that the other test files of the run still run).
	diag "pg_upgrade from $old_num:\n$upgrade_out$upgrade_err";
	for my $file (glob($new->data_dir . '/pg_upgrade_output.d/*/*.txt'),
		glob("$outdir/*.txt"))
	{
		diag "---- $file\n" . slurp_file($file);
	}
	for my $file (glob($new->data_dir . '/pg_upgrade_output.d/*/log/*.log'),
		glob("$outdir/*.log"))
	{
		my @lines = split /\n/, slurp_file($file);
		splice(@lines, 0, @lines - 30) if @lines > 30;
		diag "---- end of $file\n" . join("\n", @lines);
	}
	done_testing();
	exit;
}

$new->start;
my $new_version = $new->safe_psql('postgres', 'SELECT version()');
my $new_num = $new->safe_psql('postgres', 'SHOW server_version_num');
diag "pg_upgrade from $old_num to $new_num";
note "new cluster: $new_version";
cmp_ok($new_num, '>=', $old_num, 'the new cluster runs the same or a newer version');

for my $what (sort keys %snapshot)
{
	is($new->safe_psql('postgres', $snapshot{$what}),
		$before{$what}, "kept: $what");
}
cmp_ok($before{'oldest claims in inbox.stats'} =~ tr/\n//, '==', 3,
	'inbox.stats listed all four inboxes before the upgrade');

# Redeliveries, under every order of steps a claim can take.
for my $path (qw(auto probe insert))
{
	for my $t (@types)
	{
		my ($ib, $id) = ($keys{$t}{inbox}, $keys{$t}{id});
		is( $new->safe_psql(
				'postgres', qq{
SET ROLE app;
SET idempotent_inbox.force_path = $path;
SELECT count(*) FILTER (WHERE inbox.claim('$ib', @{[ $id->('g') ]})),
       count(*) FILTER (WHERE inbox.claim('$ib', (@{[ $id->('g') ]})::text))
  FROM generate_series(1, 1000) g;
SELECT count(*) FROM inbox.claim_many('$ib', ARRAY(SELECT @{[ $id->('g') ]} FROM generate_series(1, 1000) g));
}),
			"0|0\n0",
			"$t, force_path $path: every id claimed before the upgrade is a duplicate");
	}
}

my $higher = $max_token;
for my $t (@types)
{
	my ($ib, $id) = ($keys{$t}{inbox}, $keys{$t}{id});
	my $app = 'SET ROLE app; ';
	is( $new->safe_psql(
			'postgres', $app . qq{
SELECT inbox.try_claim('$ib', @{[ $id->(1) ]}),
       inbox.claim('$ib', @{[ $id->(2001) ]}),
       inbox.result('$ib', @{[ $id->(2001) ]}),
       inbox.claim_apply('$ib', @{[ $id->(2002) ]},
                         'INSERT INTO app.effects VALUES (\$1, \$2)', '$t', 'again'),
       inbox.claim('$ib', @{[ $id->(3001) ]}, inbox.fingerprint('{"amount": 1}')),
       inbox.claim('$ib', @{[ $id->(5001) ]});
}),
		'duplicate|f|{"n": 2001}|duplicate|f|t',
		"$t: duplicates, a stored result replays, a fresh id is claimed");
	my ($rc, $out, $err) = $new->psql('postgres',
		$app
		  . "SELECT inbox.claim('$ib', "
		  . $id->(3001)
		  . q{, inbox.fingerprint('{"amount": 9}'))},
		on_error_stop => 0);
	like($err, qr/reused with a different payload/,
		"$t: a fingerprinted claim still refuses another payload");

	# Leases.
	my $acq = sub {
		my ($g, $extra) = @_;
		$extra //= '';
		return $new->safe_psql('postgres',
			    $app
			  . "SELECT status, token, result FROM inbox.acquire('$ib', "
			  . $id->($g)
			  . ", '1 day'$extra)");
	};
	is($acq->(4001), "completed|$token{$t}{finished}|{\"charge\": \"ch_4001\"}",
		"$t: a finished lease replays its token and result");
	is($acq->(4002, q{, inbox.fingerprint('{"amount": 2}')}),
		'in_progress||', "$t: a live lease is still in progress");
	($rc, $out, $err) = $new->psql('postgres',
		$app . "SELECT * FROM inbox.acquire('$ib', " . $id->(4002)
		  . q{, '1 day', inbox.fingerprint('{"amount": 3}'))},
		on_error_stop => 0);
	like($err, qr/reused with a different payload/,
		"$t: a live lease still refuses another payload");

	for my $stale (qw(stale session released))
	{
		my $g = { stale => 4003, session => 4004, released => 4005 }->{$stale};
		if ($stale eq 'session')
		{
			# Its backend is gone: the next acquire takes it over, with a higher token.
			my ($s, $tok) = split /\|/, $acq->(4004);
			is($s, 'acquired', "$t: a session-bound lease of the old cluster is taken over");
			cmp_ok($tok, '>', $higher,
				"$t: the takeover's token is higher than any handed out before");
			$higher = $tok;
		}
		elsif ($stale eq 'released')
		{
			my ($s, $tok) = split /\|/, $acq->(4005);
			is($s, 'acquired', "$t: a released key is acquired again");
			cmp_ok($tok, '>', $higher,
				"$t: with a token higher than any handed out before");
			$higher = $tok;
		}
		for my $fn ('finish', 'release')
		{
			($rc, $out, $err) = $new->psql('postgres',
				    $app
				  . "SELECT inbox.$fn('$ib', "
				  . $id->($g)
				  . ", $token{$t}{$stale})",
				on_error_stop => 0);
			like($err, qr/token/,
				"$t: $fn with the $stale token of the old cluster is refused");
		}
	}
	is( $new->safe_psql(
			'postgres', $app . qq{
SELECT inbox.finish('$ib', @{[ $id->(4003) ]}, $token{$t}{over}, '{"late": false}');
SELECT inbox.finish('$ib', @{[ $id->(4002) ]}, $token{$t}{live}, '{"charge": "ch_4002"}');
SELECT status, token, result FROM inbox.acquire('$ib', @{[ $id->(4002) ]}, '1 day');
}),
		"\n\ncompleted|$token{$t}{live}|{\"charge\": \"ch_4002\"}",
		"$t: the holders of the taken-over and the live lease still finish");
	my ($s, $tok) = split /\|/, $acq->(6001);
	cmp_ok($tok, '>', $higher, "$t: a fresh key gets a token higher than any before");
	$higher = $tok;
}

# The SQLSTATE of a stale token, once.
my ($rc, $out, $err) = $new->psql('postgres',
	"SET ROLE app; SELECT inbox.finish('app.msgs_text', 'm-4003', $token{text}{stale})",
	extra_params => [ '-v', 'VERBOSITY=verbose' ], on_error_stop => 0);
like($err, qr/55I01/, 'a stale token is SQLSTATE 55I01');

is( $new->safe_psql(
		'postgres', q{
SET ROLE app;
SELECT inbox.position('app.msgs_bigint', 'orders', 1),
       inbox.advance('app.msgs_bigint', 'orders', 1, 200),
       inbox.advance('app.msgs_bigint', 'orders', 1, 150),
       inbox.advance('app.msgs_bigint', 'orders', 1, 201),
       inbox.position('app.msgs_text', 'audit', 0);
}),
	'200|f|f|t|7',
	'stream positions are kept: applied offsets are refused, the next one advances');

is( $new->safe_psql(
		'postgres', q{
SET ROLE app;
SELECT inbox.transition('app.payments', '{"id": 1}', 'status', 'PAID'),
       inbox.transition('app.payments', '{"id": 2}', 'status', 'CANCELLED'),
       inbox.transition('app.payments', '{"id": 3}', 'status', 'CANCELLED'),
       inbox.transition('app.payments', '{"id": 1}', 'status', 'SHIPPED');
}),
	'already|rejected|moved|moved',
	'the state machine still drives transition');
($rc, $out, $err) = $new->psql('postgres',
	q{SET ROLE app; UPDATE app.payments SET status = 'PENDING' WHERE id = 2},
	on_error_stop => 0);
like($err, qr/illegal state transition from "SHIPPED" to "PENDING"/,
	'the state machine still refuses an illegal UPDATE');

is( $new->safe_psql(
		'postgres', q{
SET ROLE app;
INSERT INTO app.sink SELECT md5('e-' || g)::uuid, 'after' FROM generate_series(1, 60) g;
SELECT count(*), count(*) FILTER (WHERE body = 'after') FROM app.sink;
}),
	'60|10',
	'the dedup_trigger drops the rows seen before the upgrade and keeps new ones');

is( $new->safe_psql(
		'postgres', q{
SELECT inbox, retention FROM inbox.inboxes ORDER BY inbox::text;
SET ROLE app;
SELECT inbox.set_retention('app.msgs_bigint', '1 day');
SELECT retention FROM inbox.inboxes WHERE inbox = 'app.msgs_bigint'::regclass;
SELECT inbox.set_retention('app.msgs_bigint', NULL);
}),
	"app.msgs_bigint|\napp.msgs_text|30 days\napp.msgs_uuid|7 days\napp.sink_seen|\n\n1 day\n",
	'retention windows are kept, and can still be set');

is( $new->safe_psql(
		'postgres', q{
SELECT count(*), count(*) FILTER (WHERE claims + duplicates > 0), count(oldest_claim) FROM inbox.stats;
}),
	'4|4|4',
	'inbox.stats answers for every inbox, with live counters on the new server');

is($new->safe_psql('postgres', 'SELECT count(*), count(DISTINCT inbox) FROM app.effects'),
	'3|3', 'no effect of claim_apply ran twice');

# ALTER EXTENSION UPDATE on the new cluster: a no-op at the newest version.
my $default = $new->safe_psql('postgres',
	q{SELECT default_version FROM pg_available_extensions WHERE name = 'idempotent_inbox'});
is( $new->safe_psql(
		'postgres', q{
ALTER EXTENSION idempotent_inbox UPDATE;
SELECT extversion FROM pg_extension WHERE extname = 'idempotent_inbox';
}),
	$default,
	"ALTER EXTENSION UPDATE on the new cluster leaves version $default");
is($new->safe_psql('postgres', $snapshot{'inbox.inboxes'}),
	$before{'inbox.inboxes'}, 'and the registry as it was');

# A dump of the upgraded database keeps what the extension keeps: the registry, the
# positions and the token sequence (its configuration, recorded by OID in pg_extension).
my $dumpfile = PostgreSQL::Test::Utils::tempdir . '/after_upgrade.sql';
$new->command_ok([ "$new_bindir/pg_dump", '-d', 'postgres', '-f', $dumpfile ],
	'pg_dump of the upgraded database');
my $dump = slurp_file($dumpfile);
like($dump, qr/^COPY inbox\.registry .*^app\.msgs_uuid\tuuid\t7 days\t/ms,
	'the dump has the registry rows');
like($dump, qr/^COPY inbox\.positions .*^app\.msgs_bigint\torders\t2\t300\t/ms,
	'the dump has the positions');
like($dump, qr/setval\('inbox\.lease_tokens', $higher, true\)/,
	'the dump has the token sequence at the last token handed out');

# The event trigger that unregisters a dropped inbox came through too.
is( $new->safe_psql(
		'postgres', q{
DROP TABLE app.msgs_bigint;
SELECT count(*) FROM inbox.registry WHERE relid::text LIKE '%msgs_bigint%';
SELECT count(*) FROM inbox.positions WHERE inbox::text LIKE '%msgs_bigint%';
SELECT count(*) FROM inbox.registry;
}),
	"0\n0\n3",
	'DROP TABLE of an inbox still unregisters it and forgets its positions');

SKIP:
{
	skip 'the old install has no version 0.1', 3 unless $has_01;
	is( $new->safe_psql(
			'legacy', q{
SELECT count(*), max(message_id) FROM legacy_msgs UNION ALL
SELECT "offset", NULL FROM inbox.positions}),
		$legacy_before,
		'0.1 database: claims and positions come through pg_upgrade');
	is( $new->safe_psql(
			'legacy', q{
SELECT extversion FROM pg_extension WHERE extname = 'idempotent_inbox';
ALTER EXTENSION idempotent_inbox UPDATE;
SELECT extversion FROM pg_extension WHERE extname = 'idempotent_inbox';
}),
		"0.1\n$default",
		'0.1 database: kept at 0.1 by pg_upgrade, then updated to the newest');
	is( $new->safe_psql(
			'legacy', q{
SELECT count(*) FILTER (WHERE inbox.claim('legacy_msgs', g::bigint)) FROM generate_series(1, 101) g;
SELECT inbox.advance('legacy_msgs', 'legacy', 0, 41), inbox.advance('legacy_msgs', 'legacy', 0, 42);
}),
		"1\nf|t",
		'0.1 database after the update: old ids are duplicates, the position is kept');
}

$new->stop;
done_testing();
