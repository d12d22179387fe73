# Makefile for the fdw extension (foreign-data wrapper lsm_fdw).
#
# Standard PGXS build of fdw.so from the LSM engine (src/engine/) and the
# PostgreSQL glue (src/fdw/).  Extra targets, defined after the PGXS include
# so that a plain `make` still builds the extension:
#
#   make engine-tests   build test/test_*.c against the engine, with
#                       sanitizers and without any PostgreSQL include path
#   make check-engine   build and run them (test/run --engine-only)
#   make fuzz-targets   build test/fuzz/fuzz_*.c, libFuzzer targets (clang)
#   make bench          build test/bench/db_bench (against RocksDB, LevelDB)
#   make value-bench    build test/bench/value/value_bench (value search)
#
# `make check` belongs to PGXS (and does nothing for an extension): use
# `make installcheck` against a running server (the pg_regress tests, sql/,
# then the isolation tests, specs/), or test/run for everything.

MODULE_big = fdw
EXTENSION = fdw
DATA = src/fdw--0.3.sql src/fdw--0.1--0.2.sql src/fdw--0.2--0.3.sql
PGFILEDESC = "lsm_fdw - foreign tables stored in an embedded LSM engine"

ENGINE_SRCS = $(sort $(wildcard src/engine/*.c))
ENGINE_HDRS = $(wildcard src/engine/*.h)
FDW_SRCS = $(sort $(wildcard src/fdw/*.c))
FDW_HDRS = $(wildcard src/fdw/*.h)
OBJS = $(ENGINE_SRCS:.c=.o) $(FDW_SRCS:.c=.o)

# Local headers come before the server's: never name one like a server header.
PG_CPPFLAGS = -Isrc/engine
SHLIB_LINK = -lxxhash

REGRESS = $(patsubst sql/%.sql,%,$(sort $(wildcard sql/*.sql)))
REGRESS_OPTS = --load-extension=fdw
# Isolation tests (PostgreSQL's isolationtester): interleavings of sessions,
# step by step, specs/NAME.spec against expected/NAME.out; `make
# installcheck` runs them after the pg_regress tests, output in output_iso/.
# Their names must differ from those of sql/ (expected/ holds both).
ISOLATION = $(patsubst specs/%.spec,%,$(sort $(wildcard specs/*.spec)))
ISOLATION_OPTS = --load-extension=fdw

EXTRA_CLEAN = test/build test/bench/db_bench test/bench/value/value_bench

PG_CONFIG ?= $(firstword $(wildcard /usr/lib/postgresql/15/bin/pg_config) pg_config)
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

# PGXS tracks no header dependencies unless the server was configured with
# --enable-depend: rebuild everything when a header changes.
$(OBJS): $(ENGINE_HDRS) $(FDW_HDRS)

#
# Engine unit tests: plain C11 + POSIX + xxhash, no PostgreSQL include path
# (which is what keeps PostgreSQL headers out of the engine), sanitizers on,
# LSM_ASSERT live.  Each test/test_*.c becomes test/build/test_*, linked
# against test/build/libengine.a.
#
TEST_CC ?= $(CC)
TEST_CFLAGS = -std=c11 -D_GNU_SOURCE -O1 -g \
	-fsanitize=address,undefined -fno-omit-frame-pointer \
	-fno-sanitize-recover=all -Wall -Wextra -Werror \
	-Isrc/engine -Itest -DLSM_DEBUG
TEST_LIBS = -lxxhash
TEST_BUILD = test/build

ENGINE_TEST_OBJS = $(patsubst src/engine/%.c,$(TEST_BUILD)/engine/%.o,$(ENGINE_SRCS))
ENGINE_TESTS = $(patsubst test/%.c,$(TEST_BUILD)/%,$(sort $(wildcard test/test_*.c)))
TEST_HDRS = $(wildcard test/*.h)

.PHONY: engine-tests check-engine bench

engine-tests: $(ENGINE_TESTS)

$(TEST_BUILD)/engine:
	mkdir -p $@

$(TEST_BUILD)/engine/%.o: src/engine/%.c $(ENGINE_HDRS) | $(TEST_BUILD)/engine
	$(TEST_CC) $(TEST_CFLAGS) -c -o $@ $<

$(TEST_BUILD)/libengine.a: $(ENGINE_TEST_OBJS) | $(TEST_BUILD)/engine
	rm -f $@
	$(AR) crs $@ $(ENGINE_TEST_OBJS)

$(TEST_BUILD)/test_%: test/test_%.c $(TEST_HDRS) $(ENGINE_HDRS) $(TEST_BUILD)/libengine.a
	$(TEST_CC) $(TEST_CFLAGS) -o $@ $< $(TEST_BUILD)/libengine.a $(TEST_LIBS)

check-engine:
	test/run --engine-only

#
# Fuzz targets: each test/fuzz/fuzz_<kind>.c defines LLVMFuzzerTestOneInput
# and becomes test/build/fuzz/fuzz_<kind>, built with clang's libFuzzer
# (Debian 12: libclang-rt-14-dev) against the engine compiled with the same
# sanitizers and coverage.  test/run replays each target's corpus
# (test/fuzz/corpus/<kind>/) once; README.md (Contributing) says how to fuzz
# for longer.
#
FUZZ_CC ?= clang
FUZZ_CFLAGS = -std=c11 -D_GNU_SOURCE -O1 -g -fno-omit-frame-pointer \
	-fsanitize=address,undefined -fno-sanitize-recover=all \
	-Wall -Wextra -Werror -Isrc/engine -Itest -Itest/fuzz -DLSM_DEBUG
FUZZ_BUILD = test/build/fuzz
FUZZ_ENGINE_OBJS = $(patsubst src/engine/%.c,$(FUZZ_BUILD)/engine/%.o,$(ENGINE_SRCS))
FUZZ_TARGETS = $(patsubst test/fuzz/%.c,$(FUZZ_BUILD)/%,$(sort $(wildcard test/fuzz/fuzz_*.c)))

.PHONY: fuzz-targets

fuzz-targets: $(FUZZ_TARGETS)

$(FUZZ_BUILD)/engine:
	mkdir -p $@

$(FUZZ_BUILD)/engine/%.o: src/engine/%.c $(ENGINE_HDRS) | $(FUZZ_BUILD)/engine
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -c -o $@ $<

$(FUZZ_BUILD)/fuzz_%: test/fuzz/fuzz_%.c $(wildcard test/fuzz/*.h) $(TEST_HDRS) $(ENGINE_HDRS) $(FUZZ_ENGINE_OBJS)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer -o $@ $< $(FUZZ_ENGINE_OBJS) $(TEST_LIBS)

#
# Benchmarks: db_bench compares the engine with RocksDB and LevelDB through
# their C APIs.  Optimised, no sanitizers, asserts off.
#
BENCH_CC ?= $(CC)
BENCH_CFLAGS = -std=gnu11 -O2 -DNDEBUG -g -Wall -Wextra \
	-Isrc/engine -Itest/bench
BENCH_SRCS = $(sort $(wildcard test/bench/*.c))
BENCH_LIBS = -lrocksdb -lleveldb -lxxhash -lpthread

bench: test/bench/db_bench

test/bench/db_bench: $(BENCH_SRCS) $(wildcard test/bench/*.h) $(ENGINE_SRCS) $(ENGINE_HDRS)
	$(BENCH_CC) $(BENCH_CFLAGS) -o $@ $(BENCH_SRCS) $(ENGINE_SRCS) $(BENCH_LIBS)

#
# Many writer processes on one store (group commit): writers_bench runs
# 1, 2, 4 and 8 processes committing single-put batches with and without
# a sync each, and prints the total commit rate.  Engine only.
#
.PHONY: writers-bench

writers-bench: test/bench/writers/writers_bench

test/bench/writers/writers_bench: test/bench/writers/writers_bench.c $(ENGINE_SRCS) $(ENGINE_HDRS)
	$(BENCH_CC) $(BENCH_CFLAGS) -o $@ test/bench/writers/writers_bench.c $(ENGINE_SRCS) -lxxhash

#
# Value search benchmark: value_bench reproduces the experiments of the
# Bloom filter hierarchy paper (seed 000) with every value search strategy
# of the engine (see the header of test/bench/value/value_bench.c; run with
# test/bench/value/run.sh).  Same flags as db_bench; engine only.
#
VALUE_BENCH_SRCS = $(sort $(wildcard test/bench/value/*.c))

.PHONY: value-bench

value-bench: test/bench/value/value_bench

test/bench/value/value_bench: $(VALUE_BENCH_SRCS) $(wildcard test/bench/value/*.h) $(ENGINE_SRCS) $(ENGINE_HDRS)
	$(BENCH_CC) $(BENCH_CFLAGS) -Itest/bench/value -o $@ $(VALUE_BENCH_SRCS) $(ENGINE_SRCS) -lxxhash -lpthread
