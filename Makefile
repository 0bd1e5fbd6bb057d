# idempotent_inbox: a plain PGXS build, as pgvector's.
#
#   make && sudo make install    build and install with the pg_config on PATH; installs
#                                no package and needs nothing but pg_config (pass
#                                PG_CONFIG=/path/to/pg_config for another server)
#   make installcheck            the pg_regress, isolation and TAP suites against $PGHOST
#
# The package-installing harness (test/harness/) sits behind its own targets, which
# copy the tree, install what is missing (postgresql-server-dev-15 among it) and build
# with an explicit PG_CONFIG:
#
#   make demo      build, install, run the demos on a throwaway cluster
#   make demo-outbox  only the outbox pipeline demo (examples/outbox_rabbitmq)
#   make test      the same, then every suite on PostgreSQL 15, 17 and 19 (the newer
#                  ones in Debian chroots, test/harness/versions.sh); ends with
#                  "N passed, N failed"
#   make test-versions  every suite on every tested major (15, 17, 18, 19)
#   make bench     the benchmark suite (test/bench/README.md)
#   make bench-citus  its Citus section: a coordinator and two workers
#   make bench-growth its growth section: inboxes of 1M to 50M claims
#   make fuzz      the long fuzz run (test/fuzz/README.md)
#   make valgrind  regress and isolation under valgrind
#   make deb       the Debian packages (debian/, pg_buildext), built in build/deb
#
# On a fresh machine pg_config does not exist yet: $(shell) then prints
# "make: pg_config: No such file or directory", PGXS is empty and `include` of an empty
# list includes nothing, so the harness targets, which use no PGXS variable, still run
# and install it.  The default goal stays `all`, which only PGXS defines, so a plain
# `make` there stops with "No rule to make target 'all'" instead of running the
# harness.  The include is not guarded: a pg_config whose PGXS file is missing (libpq-dev
# without the server packages) stops every target, `make test` included; install
# postgresql-server-dev-NN, or run the harness directly (bash test/harness/test).

EXTENSION = idempotent_inbox
MODULE_big = idempotent_inbox
OBJS = $(patsubst %.c,%.o,$(sort $(wildcard src/*.c)))
# Install scripts, update scripts, and the per-version control files (0.1 lived in schema inbox).
DATA = $(sort $(wildcard idempotent_inbox--*.sql)) $(wildcard idempotent_inbox--*.control)
PGFILEDESC = "idempotent_inbox - exactly-once effects for at-least-once consumers"

# In order: drop_extension must run last.
REGRESS = inbox_admin claim claim_paths claim_many claim_apply claim_apply_args \
	idempotency_keys retention streams inbox_shape privileges hostile_arguments \
	upsert transition state_machine claim_apply_hostile dedup_trigger_resolution \
	upgrade schema_capture shared_views trigger_arguments purge_as_owner \
	shape_targets shape_rights transition_states shape_hostile force_path missing_relations \
	sharded sharded_stored dedup_trigger_sharded untyped_params claim_apply_many typed_writes write_in_place dedup_trigger_held direct_parity \
	hostile_identifiers warm_caches stream_groups failures failures_sharded outbox drop_extension
REGRESS_OPTS = --load-extension=idempotent_inbox

ISOLATION = $(basename $(notdir $(sort $(wildcard test/specs/*.spec))))
ISOLATION_OPTS = --inputdir=test --outputdir=output_iso --load-extension=idempotent_inbox

TAP_TESTS = 1
PROVE_TESTS = $(sort $(wildcard test/t/*.pl))

EXTRA_CLEAN = output_iso tmp_check results regression.diffs regression.out

.DEFAULT_GOAL := all

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

# PGXS does not track headers: every object depends on ours.
$(OBJS): $(wildcard src/*.h)

# The harness: scripts that need no PGXS variable, so that they run before pg_config exists.
.PHONY: demo demo-outbox test test-versions bench bench-citus bench-growth fuzz valgrind deb

demo:
	@bash test/harness/demo

demo-outbox:
	@INBOX_DEMO_ONLY=outbox bash test/harness/demo

test:
	@bash test/harness/test

test-versions:
	@INBOX_VERSIONS="15 17 18 19" bash test/harness/test

bench:
	@bash test/harness/bench

bench-citus:
	@BENCH_ONLY=citus bash test/harness/bench

bench-growth:
	@BENCH_ONLY=growth bash test/harness/bench

fuzz:
	@bash test/fuzz/run

valgrind:
	@bash test/harness/valgrind

deb:
	@bash test/harness/deb
