# idempotent_inbox: PGXS build, plus the two entry points a newcomer runs first.
#
#   make demo    install what is missing, build, install, run the demo on a throwaway cluster
#   make test    the same, then every suite; ends with "N passed, N failed"
#   make fuzz    the same build, then the long fuzz run (test/fuzz/README.md)
#
# Both work on a fresh Debian machine before the server headers exist, so PGXS is
# included only when pg_config can find it.

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
	shape_targets shape_rights transition_states shape_hostile \
	hostile_identifiers drop_extension
REGRESS_OPTS = --load-extension=idempotent_inbox

ISOLATION = $(basename $(notdir $(sort $(wildcard test/specs/*.spec))))
ISOLATION_OPTS = --inputdir=test --outputdir=output_iso --load-extension=idempotent_inbox

TAP_TESTS = 1
PROVE_TESTS = $(sort $(wildcard test/t/*.pl))

EXTRA_CLEAN = output_iso tmp_check results regression.diffs regression.out

PG_CONFIG ?= $(shell test -x /usr/lib/postgresql/15/bin/pg_config && echo /usr/lib/postgresql/15/bin/pg_config || echo pg_config)
PGXS := $(shell $(PG_CONFIG) --pgxs 2>/dev/null)
ifneq ($(wildcard $(PGXS)),)
include $(PGXS)
# PGXS does not track headers: every object depends on ours.
$(OBJS): $(wildcard src/*.h)
else
all:
	@echo "PostgreSQL server headers not found: run 'make demo' or 'make test', which install them"
	@exit 1
endif

.PHONY: demo test bench fuzz valgrind

demo:
	@bash test/harness/demo

test:
	@bash test/harness/test

bench:
	@bash test/harness/bench

fuzz:
	@bash test/fuzz/run

valgrind:
	@bash test/harness/valgrind
