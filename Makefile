# psplice — GNU Makefile. Quiet unless V=1.
VERSION_MAJOR := $(shell sed -n 's/^\#define PSPLICE_VERSION_MAJOR //p' include/psplice.h)
VERSION_MINOR := $(shell sed -n 's/^\#define PSPLICE_VERSION_MINOR //p' include/psplice.h)
VERSION_PATCH := $(shell sed -n 's/^\#define PSPLICE_VERSION_PATCH //p' include/psplice.h)
VERSION := $(VERSION_MAJOR).$(VERSION_MINOR).$(VERSION_PATCH)

PREFIX ?= /usr/local
LIBDIR ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
BINDIR ?= $(PREFIX)/bin
MANDIR ?= $(PREFIX)/share/man
PKGCONFIGDIR ?= $(LIBDIR)/pkgconfig
BASHCOMPDIR ?= $(PREFIX)/share/bash-completion/completions
LIBEXECDIR ?= $(PREFIX)/libexec

CC ?= cc
BUILD ?= build
OPT ?= -O2 -g
SAN ?=
CFLAGS ?= $(OPT)
# A distribution's build passes its own (hardening: dpkg-buildflags).
CPPFLAGS ?=
LDFLAGS ?=
# -Werror is the project's own checks' (make check and its parts, CI), not
# a user's or a packager's build: a newer compiler's new warning must not
# break a plain `make`.
WERROR ?=
WARN = -Wall -Wextra $(WERROR) -Wshadow -Wstrict-prototypes -Wmissing-prototypes
BASE = -std=gnu11 -D_GNU_SOURCE -D_FILE_OFFSET_BITS=64 $(WARN) -Iinclude $(SAN)
LIB_CFLAGS = $(BASE) -fPIC -fvisibility=hidden $(CPPFLAGS) $(CFLAGS)
APP_CFLAGS = $(BASE) $(CPPFLAGS) $(CFLAGS)
LDLIBS := -lpthread

ifeq ($(V),1)
Q :=
say = @true
else
Q := @
say = @printf '  %-6s %s\n' $(1) $(2)
endif

SONAME := libpsplice.so.$(VERSION_MAJOR)
LIB_SRC := $(wildcard src/*.c)
LIB_OBJ := $(LIB_SRC:src/%.c=$(BUILD)/src/%.o)
CLI_SRC := $(wildcard cli/*.c cli/*/*.c)
# The headers of cli/ and of its folders (a folder per command that has
# more than two files); a file includes another folder's as "relay/x.h".
CLI_HDR := $(wildcard cli/*.h cli/*/*.h)
CLI_OBJ := $(CLI_SRC:%.c=$(BUILD)/%.o)
# The benchmark is a program of its own, psplice-bench, which psplice bench
# runs: only those who install it carry its code (and libm, for the plot).
# It shares the option handling, messages and /proc/meminfo reader of cli/.
BENCH_SRC := $(wildcard bench/*.c)
# What the command's subcommands share, which the benchmark and the parser
# fuzzers link too.
CLI_COMMON_SRC := cli/out.c cli/outq.c cli/opts.c cli/sys.c cli/copy.c cli/parse.c cli/addr.c \
	cli/progress.c cli/relay/proxy_hdr.c
BENCH_OBJ := $(BENCH_SRC:%.c=$(BUILD)/%.o) $(CLI_COMMON_SRC:%.c=$(BUILD)/%.o) $(BUILD)/cli/dirty.o
BENCH_DIR ?= $(LIBEXECDIR)/psplice
TEST_SRC := $(wildcard tests/t_*.c)
TEST_BIN := $(TEST_SRC:tests/%.c=$(BUILD)/tests/%)
TEST_HELP := $(BUILD)/tests/helpers.o
# Runnable programs apart from the tests (examples/), which the tests run.
EXAMPLE_SRC := $(wildcard examples/*.c)
EXAMPLE_BIN := $(EXAMPLE_SRC:examples/%.c=$(BUILD)/examples/%)
# What the programs beyond the library (the command, the preload library,
# the benchmark, the tests) include of src/: the headers of src/shared/
# (write-behind's state, cachestat(2), errno's names), which need nothing
# else of it. That directory
# alone is on their quoted include path, so that another internal header
# does not build there by its name.
SHARED_INC := -iquote src/shared
PRELOAD := $(BUILD)/libpsplice-preload.so
PRELOAD_SRC := $(wildcard preload/*.c)
PRELOAD_OBJ := $(PRELOAD_SRC:preload/%.c=$(BUILD)/preload/%.o)
# The preload library goes into programs built without sanitizers, so it is
# built without them; a sanitizer build compiles the library's sources again
# for it.
PRELOAD_CFLAGS = $(filter-out $(SAN),$(LIB_CFLAGS)) -U_FILE_OFFSET_BITS $(SHARED_INC)
PRELOAD_LIB := $(if $(SAN),$(BUILD)/preload/libpsplice.a,$(BUILD)/libpsplice.a)
PRELOAD_DIR ?= $(LIBDIR)/psplice

.PHONY: all lib tools tests examples check check-quick check-asan check-tsan check-valgrind check-abi \
	check-musl check-clang \
	check-rust check-python install-python bench-bindings \
	demo install uninstall install-check clean deps deps-demo deps-deb bench deb deb-check stress
all: lib tools

lib: $(BUILD)/libpsplice.a $(BUILD)/$(SONAME)
tools: $(BUILD)/psplice $(BUILD)/psplice-bench $(PRELOAD)
tests: $(TEST_BIN) examples
examples: $(EXAMPLE_BIN)

$(BUILD)/src/%.o: src/%.c src/*.h src/shared/*.h include/psplice.h
	@mkdir -p $(@D)
	$(call say,CC,$<)
	$(Q)$(CC) $(LIB_CFLAGS) -c -o $@ $<

$(BUILD)/libpsplice.a: $(LIB_OBJ)
	$(call say,AR,$@)
	$(Q)rm -f $@ && $(AR) rcs $@ $^

$(BUILD)/$(SONAME): $(LIB_OBJ) src/libpsplice.map
	$(call say,LD,$@)
	$(Q)$(CC) $(LIB_CFLAGS) $(LDFLAGS) -shared -Wl,-soname,$(SONAME) \
		-Wl,--version-script,src/libpsplice.map -Wl,-z,defs -o $@ $(LIB_OBJ) $(LDLIBS)
	$(Q)ln -sf $(SONAME) $(BUILD)/libpsplice.so

$(BUILD)/cli/%.o: cli/%.c $(CLI_HDR) src/shared/*.h include/psplice.h
	@mkdir -p $(@D)
	$(call say,CC,$<)
	$(Q)$(CC) $(APP_CFLAGS) -iquote cli $(SHARED_INC) -c -o $@ $<

$(BUILD)/bench/%.o: bench/%.c bench/*.h $(CLI_HDR) src/shared/*.h include/psplice.h
	@mkdir -p $(@D)
	$(call say,CC,$<)
	$(Q)$(CC) $(APP_CFLAGS) -Icli $(SHARED_INC) -c -o $@ $<

$(BUILD)/psplice: $(CLI_OBJ) $(BUILD)/libpsplice.a
	$(call say,LD,$@)
	$(Q)$(CC) $(APP_CFLAGS) $(LDFLAGS) -o $@ $(CLI_OBJ) $(BUILD)/libpsplice.a $(LDLIBS)

$(BUILD)/psplice-bench: $(BENCH_OBJ) $(BUILD)/libpsplice.a
	$(call say,LD,$@)
	$(Q)$(CC) $(APP_CFLAGS) $(LDFLAGS) -o $@ $(BENCH_OBJ) $(BUILD)/libpsplice.a $(LDLIBS) -lm

# libpsplice-preload.so: the library linked in statically, its symbols kept
# inside (--exclude-libs), so that only the interposed calls are exported.
$(BUILD)/preload/%.o: preload/%.c preload/*.h src/shared/*.h src/compiler.h include/psplice.h
	@mkdir -p $(@D)
	$(call say,CC,$<)
	$(Q)$(CC) $(PRELOAD_CFLAGS) -c -o $@ $<

$(BUILD)/preload/src/%.o: src/%.c src/*.h src/shared/*.h include/psplice.h
	@mkdir -p $(@D)
	$(call say,CC,$<)
	$(Q)$(CC) $(filter-out $(SAN),$(LIB_CFLAGS)) -c -o $@ $<

$(BUILD)/preload/libpsplice.a: $(LIB_SRC:src/%.c=$(BUILD)/preload/src/%.o)
	$(call say,AR,$@)
	$(Q)rm -f $@ && $(AR) rcs $@ $^

$(PRELOAD): $(PRELOAD_OBJ) $(PRELOAD_LIB)
	$(call say,LD,$@)
	$(Q)$(CC) $(PRELOAD_CFLAGS) $(LDFLAGS) -shared -Wl,--exclude-libs,ALL -Wl,-z,defs \
		-o $@ $(PRELOAD_OBJ) $(PRELOAD_LIB) -ldl $(LDLIBS)

$(BUILD)/cli/exec/cmd.o: APP_CFLAGS += -DPSPLICE_PRELOAD_PATH='"$(PRELOAD_DIR)/libpsplice-preload.so"'
$(BUILD)/cli/psplice.o: APP_CFLAGS += -DPSPLICE_BENCH_PATH='"$(BENCH_DIR)/psplice-bench"'

# The installed paths compiled into the command: the stamp changes when they
# do (make install PREFIX=/usr after a plain make), and what holds them is
# built again.
INSTALLED_PATHS := $(PRELOAD_DIR)/libpsplice-preload.so $(BENCH_DIR)/psplice-bench
$(BUILD)/paths.stamp: FORCE
	@mkdir -p $(@D)
	$(Q)echo '$(INSTALLED_PATHS)' | cmp -s - $@ || echo '$(INSTALLED_PATHS)' >$@
$(BUILD)/cli/exec/cmd.o $(BUILD)/cli/psplice.o: $(BUILD)/paths.stamp
.PHONY: FORCE
FORCE:

$(TEST_HELP): tests/helpers.c tests/t.h src/shared/cachestat.h include/psplice.h
	@mkdir -p $(@D)
	$(call say,CC,$<)
	$(Q)$(CC) $(APP_CFLAGS) $(SHARED_INC) -c -o $@ $<

$(BUILD)/tests/t_%: tests/t_%.c $(TEST_HELP) $(BUILD)/libpsplice.a tests/t.h src/shared/*.h
	@mkdir -p $(@D)
	$(call say,CC,$<)
	$(Q)$(CC) $(APP_CFLAGS) $(SHARED_INC) $(LDFLAGS) -o $@ $< $(TEST_HELP) $(BUILD)/libpsplice.a $(LDLIBS)

# An example uses the public header alone, as a program outside the tree
# would; it links the static library so that it runs from the build tree.
$(BUILD)/examples/%: examples/%.c $(BUILD)/libpsplice.a include/psplice.h
	@mkdir -p $(@D)
	$(call say,CC,$<)
	$(Q)$(CC) $(APP_CFLAGS) $(LDFLAGS) -o $@ $< $(BUILD)/libpsplice.a $(LDLIBS)

# The main job, on generated data.
demo: deps-demo $(BUILD)/psplice
	$(Q)sh bench/demo.sh $(BUILD)/psplice

deps-demo:
	$(Q)sh tests/deps.sh demo

deps:
	$(Q)sh tests/deps.sh check

# Every test, then again under ASan+UBSan, the threaded ones under TSan, a
# dozen under valgrind, the install and ABI checks, the Python binding's
# tests and a short pass of each fuzzer; every part runs, and the log
# closes with one line that counts them all (tests/check.sh). check-quick
# is the first part alone.
check: deps
	$(Q)MAKE="$(MAKE)" sh tests/check.sh

check-quick: WERROR = -Werror
check-quick: tests tools
	$(Q)RUN_LABEL=check-quick sh tests/run.sh $(BUILD)

check-asan:
	$(Q)$(MAKE) --no-print-directory BUILD=build-asan CC=gcc \
		SAN="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer" \
		OPT="-O1 -g" tests tools
	$(Q)ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
		RUN_LABEL=check-asan sh tests/run.sh build-asan

# The command too, for its threads: the relay's workers, cp's tree walk.
CLI_TSAN_TESTS := t_cli_relay_msg.sh t_cli_relay_act.sh t_cli_relay_cut.sh t_cli_cpwalk.sh \
	t_cli_relay_targets.sh t_cli_relay_reload.sh t_cli_relay_replace.sh \
	t_cli_relay_rate.sh t_cli_relay_takeover.sh t_cli_relay_metrics.sh \
	t_cli_relay_config.sh t_cli_relay_stop.sh
# A relay out of epoll watches (as a user of its own).
CLI_TSAN_TESTS += t_cli_relay_watch.sh
# A signal in a reload's window.
CLI_TSAN_TESTS += t_cli_relay_resig.sh
# The open-file limit raised at start.
CLI_TSAN_TESTS += t_cli_relay_nofile.sh
# The pid file across reloads and --replace.
CLI_TSAN_TESTS += t_cli_relay_pidfile.sh
# The datagrams to a Type=notify service manager.
CLI_TSAN_TESTS += t_cli_relay_notify.sh
# The log's reader stalled, its lines queued.
CLI_TSAN_TESTS += t_cli_relay_log.sh
# Who may connect: one source's count, shared by the workers.
CLI_TSAN_TESTS += t_cli_relay_gate.sh
# One set of workers for every line of a --config file.
CLI_TSAN_TESTS += t_cli_relay_workers.sh
check-tsan:
	$(Q)$(MAKE) --no-print-directory BUILD=build-tsan CC=gcc SAN="-fsanitize=thread" \
		OPT="-O1 -g" build-tsan/tests/t_threads build-tsan/tests/t_pending \
		$(FAULT_TSAN_TESTS:%=build-tsan/tests/%) build-tsan/psplice
	$(Q)TSAN_OPTIONS=halt_on_error=1 RUN_LABEL=check-tsan sh tests/run.sh build-tsan \
		t_threads t_pending \
		$(FAULT_TSAN_TESTS) $(CLI_TSAN_TESTS)

# Memory errors and leaks in the plain build, on the tests whose syscalls
# valgrind knows (it does not know cachestat, used by the sync tests).
VALGRIND_TESTS := t_basic t_badinput t_fail_epipe t_fail_enospc t_fail_eisdir \
	t_pitfall_stranded t_pitfall_append t_pitfall_overlap t_pitfall_sigpipe \
	t_pitfall_tty t_fail_eintr t_threads t_pair t_contract_edges t_pending t_tee t_oneshot_change \
	t_nonblock_room t_pair_known
# The real-fault tests (tests/t_fault_*.c): those with threads also under
# TSan; the fast ones under valgrind (the signal storm is too slow there).
FAULT_TSAN_TESTS := t_fault_threads16 t_fault_truncate t_oneshot_change
VALGRIND_TESTS += t_fault_rlimit t_fault_odirect t_fault_pipesize t_fault_ext4 t_fault_regrow
check-valgrind: tests
	$(Q)PSPLICE_TEST_WRAP="valgrind -q --error-exitcode=99 --leak-check=full \
		--errors-for-leak-kinds=definite" RUN_LABEL=check-valgrind sh tests/run.sh \
		$(BUILD) $(VALGRIND_TESTS)

# The same sources built by clang (build-clang) and with musl (build-musl),
# -Werror as in every check. Under clang the library's tests run; under
# musl they do, and the command's but MUSL_NOT_TESTS. musl-gcc searches no
# kernel headers: the machine's (linux-libc-dev) are linked into
# build-musl/kernel-headers, as Alpine's linux-headers gives them.
C_TESTS = $(notdir $(TEST_BIN))
MUSL_INC := build-musl/kernel-headers
# Not under musl, each for a reason of glibc's. Messages in glibc's words:
# getopt's ("unrecognized option '--x'"; musl: "unrecognized option: x")
# and strerror's ("Address already in use"; musl: "Address in use").
MUSL_NOT_TESTS := t_cli.sh t_cli_catlisten.sh t_cli_catrange.sh t_cli_cp2.sh \
	t_cli_cpargs.sh t_cli_cpdest.sh t_cli_cpgnu.sh t_cli_cpopts.sh t_cli_cpsync.sh \
	t_cli_relay.sh t_cli_relay_act.sh t_cli_relay_config.sh t_cli_relay_metrics.sh \
	t_cli_relay_msg.sh t_cli_relay_opts.sh t_cli_relay_targets.sh t_cli_sync.sh \
	t_cli_asname.sh
# The preload library put into the machine's programs, which are glibc's.
MUSL_NOT_TESTS += t_cli_exec.sh
# strace of epoll_wait, which musl makes an epoll_pwait.
MUSL_NOT_TESTS += t_cli_relay_stop.sh t_cli_relay_values.sh
# A write to standard output that failed before the exit check: musl's
# stdio drops the buffer and fflush at exit has no errno to say.
MUSL_NOT_TESTS += t_cli_stdfd.sh
MUSL_TESTS = $(filter-out $(MUSL_NOT_TESTS),$(C_TESTS) $(notdir $(wildcard tests/t_*.sh)))
check-musl:
	$(Q)sh tests/deps.sh musl
	$(Q)mkdir -p $(MUSL_INC) && ln -sfn /usr/include/linux /usr/include/asm-generic $(MUSL_INC)/ && \
		ln -sfn /usr/include/$$(gcc -print-multiarch)/asm $(MUSL_INC)/asm
	$(Q)$(MAKE) --no-print-directory BUILD=build-musl CC=musl-gcc WERROR=-Werror \
		CPPFLAGS="-isystem $(MUSL_INC)" tools tests
	$(Q)RUN_LABEL=check-musl sh tests/run.sh build-musl $(MUSL_TESTS)

check-clang:
	$(Q)$(MAKE) --no-print-directory BUILD=build-clang CC=clang WERROR=-Werror tools tests
	$(Q)RUN_LABEL=check-clang sh tests/run.sh build-clang $(C_TESTS)

install: lib tools
	$(call say,INSTALL,$(DESTDIR)$(PREFIX))
	$(Q)install -d $(DESTDIR)$(LIBDIR) $(DESTDIR)$(INCLUDEDIR) $(DESTDIR)$(BINDIR) \
		$(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man3 $(DESTDIR)$(PKGCONFIGDIR) \
		$(DESTDIR)$(BASHCOMPDIR) $(DESTDIR)$(PRELOAD_DIR) $(DESTDIR)$(BENCH_DIR)
	$(Q)install -m 644 $(BUILD)/libpsplice.a $(DESTDIR)$(LIBDIR)/
	$(Q)install -m 644 $(PRELOAD) $(DESTDIR)$(PRELOAD_DIR)/
	$(Q)install -m 755 $(BUILD)/$(SONAME) $(DESTDIR)$(LIBDIR)/
	$(Q)ln -sf $(SONAME) $(DESTDIR)$(LIBDIR)/libpsplice.so
	$(Q)install -m 644 include/psplice.h $(DESTDIR)$(INCLUDEDIR)/
	$(Q)install -m 755 $(BUILD)/psplice $(DESTDIR)$(BINDIR)/
	$(Q)install -m 755 $(BUILD)/psplice-bench $(DESTDIR)$(BENCH_DIR)/
	$(Q)install -m 644 man/*.1 $(DESTDIR)$(MANDIR)/man1/
	$(Q)install -m 644 man/*.3 $(DESTDIR)$(MANDIR)/man3/
	$(Q)install -m 644 completion/psplice $(DESTDIR)$(BASHCOMPDIR)/
	$(Q)sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(LIBDIR)|' \
		-e 's|@INCLUDEDIR@|$(INCLUDEDIR)|' -e 's|@VERSION@|$(VERSION)|' \
		psplice.pc.in > $(DESTDIR)$(PKGCONFIGDIR)/psplice.pc
	$(Q)$(LDCONFIG_STEP)

# Into the running system (no DESTDIR), the loader's cache is made anew
# (ldconfig) as root, so that programs find libpsplice.so.N at once; when
# that cannot be, or LIBDIR is not a directory the loader searches, the one
# line to run is said. A staged install (DESTDIR) leaves it to the package.
LDCONFIG_STEP = if [ -n "$(DESTDIR)" ]; then :; \
	elif [ "$$(id -u)" -ne 0 ] || ! command -v ldconfig >/dev/null 2>&1; then \
		echo "install: run 'ldconfig' as root for programs to find $(SONAME) in $(LIBDIR)"; \
	elif ! ldconfig; then \
		echo "install: ldconfig failed: run 'ldconfig' as root for programs to find $(SONAME)"; \
	elif ! ldconfig -p | grep -qF "$(LIBDIR)/$(SONAME)"; then \
		echo "install: the loader does not search $(LIBDIR): run" \
			"'echo $(LIBDIR) > /etc/ld.so.conf.d/psplice.conf && ldconfig'"; \
	fi

# What install wrote, and only that: its files, and the directories of the
# project's own (LIBDIR/psplice, LIBEXECDIR/psplice) once empty.
uninstall:
	$(call say,RM,$(DESTDIR)$(PREFIX))
	$(Q)rm -f $(DESTDIR)$(LIBDIR)/libpsplice.a $(DESTDIR)$(LIBDIR)/$(SONAME) \
		$(DESTDIR)$(LIBDIR)/libpsplice.so $(DESTDIR)$(INCLUDEDIR)/psplice.h \
		$(DESTDIR)$(BINDIR)/psplice $(DESTDIR)$(BENCH_DIR)/psplice-bench \
		$(DESTDIR)$(PRELOAD_DIR)/$(notdir $(PRELOAD)) $(DESTDIR)$(BASHCOMPDIR)/psplice \
		$(DESTDIR)$(PKGCONFIGDIR)/psplice.pc \
		$(addprefix $(DESTDIR)$(MANDIR)/man1/,$(notdir $(wildcard man/*.1))) \
		$(addprefix $(DESTDIR)$(MANDIR)/man3/,$(notdir $(wildcard man/*.3)))
	$(Q)rmdir $(DESTDIR)$(PRELOAD_DIR) $(DESTDIR)$(BENCH_DIR) 2>/dev/null || true
	$(Q)$(UNLDCONFIG_STEP)

# After uninstall, the loader's cache is made anew as root, so that it
# names no library that is gone; install's advice (a directory to add to
# the loader's path) would be wrong here. Only when the cache still names
# the library and root cannot be asked is the line to run said.
UNLDCONFIG_STEP = if [ -n "$(DESTDIR)" ] || ! command -v ldconfig >/dev/null 2>&1; then :; \
	elif [ "$$(id -u)" -eq 0 ]; then \
		ldconfig || echo "uninstall: ldconfig failed: run 'ldconfig' as root"; \
	elif ldconfig -p | grep -qF "$(LIBDIR)/$(SONAME)"; then \
		echo "uninstall: run 'ldconfig' as root for programs to stop finding $(SONAME) in $(LIBDIR)"; \
	fi

# The Python binding (bindings/python): its tests, with the library just
# built found by its soname through LD_LIBRARY_PATH, as an installed one
# would be through ld.so.cache. Debian's python3 carries python3-pytest;
# another python3 (a pyenv one first on PATH) may have none.
PYTHON ?= $(firstword $(wildcard /usr/bin/python3) python3)
check-python: lib
	$(Q)if $(PYTHON) -c 'import pytest' 2>/dev/null; then \
		cd bindings/python && env -u PSPLICE_LIBRARY PYTHONDONTWRITEBYTECODE=1 \
		LD_LIBRARY_PATH=$(abspath $(BUILD))$${LD_LIBRARY_PATH:+:$$LD_LIBRARY_PATH} \
		$(PYTHON) -m pytest -q -p no:cacheprovider --basetemp=$(abspath $(BUILD))/pytest tests; \
	else \
		echo "SKIP check-python: $(PYTHON) has no pytest (apt-get install python3-pytest)"; \
		echo "python: 0 passed, 0 failed, 1 skipped"; \
	fi

# The Python package is not part of make install: install-python puts it
# in PYTHONDIR under DESTDIR, by default the directory below PREFIX that
# $(PYTHON) searches (on Debian, /usr/local/lib/python3.X/dist-packages
# for PREFIX=/usr/local and /usr/lib/python3/dist-packages for /usr). It
# needs the library installed (make install, or the libpsplice0 package).
PYTHONDIR ?= $(shell $(PYTHON) bindings/python/sitedir.py $(PREFIX))
install-python:
	$(call say,INSTALL,$(DESTDIR)$(PYTHONDIR)/psplice)
	$(Q)install -d $(DESTDIR)$(PYTHONDIR)/psplice
	$(Q)install -m 644 bindings/python/psplice/*.py $(DESTDIR)$(PYTHONDIR)/psplice/

# The library's exported symbols against debian/libpsplice0.symbols: a change
# of ABI is an edit of that file, by the rule tests/abi-check.sh states.
check-abi: lib
	$(Q)sh tests/abi-check.sh $(BUILD)

# The Rust binding (bindings/rust): cargo test, offline, on the library here.
check-rust: lib
	$(Q)sh bindings/rust/check.sh $(BUILD)

# The bindings' copy of a cached file into a pipe against their language's
# own (shutil.copyfileobj, std::io::copy) and against the C library, in the
# same run (BINDINGS_MIB, 1024; 256 with QUICK=1). Binding and C run back
# to back, three pairs in each of 9 rounds, and the ratio to C is the
# median of the pairs' own, wall and CPU: on a busy machine one run's wall
# time can be twice the next one's. Then the Python binding's CPU per
# small copy against C's.
# Part of make bench.
BINDINGS_MIB ?= $(if $(QUICK),256,1024)
bench-bindings: tools
	$(Q)LD_LIBRARY_PATH=$(abspath $(BUILD)) $(PYTHON) bench/python_bench.py \
		--size $(BINDINGS_MIB)M --runs 9 --calls 20000 --dir $(abspath $(BUILD))
	$(Q)cd bindings/rust && PATH=$$PATH:$$HOME/.cargo/bin CARGO_TARGET_DIR=$(abspath $(BUILD))/rust-target \
		PSPLICE_LIB_DIR=$(abspath $(BUILD)) cargo run -q --offline --release --example bench -- \
		$(BINDINGS_MIB) $(abspath $(BUILD)) --pipe-size 1048576

# Install into a scratch root, then build a C and a C++ program against the
# installed header and library through pkg-config.
install-check:
	$(Q)sh tests/install-check.sh

# GNU coreutils' own tests of cp, cat and tee (Debian's source, fetched
# and built once into BUILD/gnu), each run with GNU's programs and with
# psplice's in their place; a difference not listed, with its reason, in
# tests/gnu/known.txt fails (tests/gnu/run.sh). Part of make check.
.PHONY: check-gnu deps-gnu
check-gnu: deps-gnu tools
	$(Q)sh tests/gnu/run.sh $(BUILD)

deps-gnu:
	$(Q)sh tests/deps.sh gnu

# The Debian packages (debian/), built from a clean copy of the tree into
# $(BUILD)/deb and checked by lintian; as root, the build dependencies are
# installed first. deb-check installs them with dpkg (as root), builds and
# runs a program against them, runs psplice, and purges them.
deb: deps-deb
	$(Q)WERROR=-Werror sh tests/deb-build.sh $(BUILD)/deb

deps-deb:
	$(Q)sh tests/deps.sh deb

deb-check:
	$(Q)sh tests/deb-check.sh $(BUILD)/deb

# The benchmark: psplice bench (build/psplice-bench), every group (QUICK=1: the one-minute subset;
# BENCH_ONLY=cat,cp: some groups). Peers are installed when root.
bench: tools
	-$(Q)sh tests/deps.sh bench
	$(Q)mkdir -p bench/results
	$(Q)$(BUILD)/psplice bench $(if $(QUICK),--quick) $(if $(BENCH_ONLY),--only $(BENCH_ONLY)) \
		--out bench/results
	$(if $(BENCH_ONLY),,$(Q)$(MAKE) --no-print-directory bench-bindings)

# Load and faults for a fixed time, loopback only (tests/stress/stress.c):
# the relay under STRESS_CONNS (1000) connections for STRESS_TIME (60)
# seconds, a third closing early and a third resetting, and cp -r of
# STRESS_FILES (10000) files onto a tmpfs another process fills. Fails if a
# byte is lost or the relay's memory, fds and pipes do not come back.
$(BUILD)/stress: tests/stress/stress.c
	@mkdir -p $(@D)
	$(call say,CC,$<)
	$(Q)$(CC) $(APP_CFLAGS) $(LDFLAGS) -o $@ $<

stress: tools $(BUILD)/stress
	$(Q)mkdir -p $(BUILD)/scratch
	$(Q)d=$$(mktemp -d $(BUILD)/scratch/stress-XXXXXX) && \
		$(BUILD)/stress $(BUILD)/psplice $$d; rc=$$?; rm -rf $$d; exit $$rc

clean:
	$(Q)rm -rf build build-asan build-tsan build-fuzz build-cover build-musl build-clang

# The differential fuzzer (tests/fuzz/README.md). fuzz_driver runs random
# sequences of calls against the model and replays the saved ones (the
# test t_fuzz_regress.sh); libFuzzer harnesses, built by clang with
# ASan+UBSan in build-fuzz, run FUZZ_TIME seconds each (make fuzz) or
# FUZZ_QUICK_TIME (make fuzz-quick, part of make check); fuzz-cover prints
# the lines of src/ the driver reaches.
FUZZ_SRC := tests/fuzz/fz_run.c tests/fuzz/fz_seq.c tests/fuzz/fz_end.c tests/fuzz/fz_tee.c \
	tests/fuzz/fz_swap.c
FUZZ_HARNESSES := ops size range addr opts proxy
FUZZ_TIME ?= 60
FUZZ_QUICK_TIME ?= 15
FUZZ_SEEDS ?= 400
FUZZ_CFLAGS := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
FUZZ_RUN := ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 FZ_DIR=$(CURDIR)/build-fuzz/scratch
.PHONY: fuzz fuzz-quick fuzz-build fuzz-lib fuzz-cover
tests: $(BUILD)/tests/fuzz_driver

$(BUILD)/tests/fuzz_driver: tests/fuzz/fz_main.c $(FUZZ_SRC) tests/fuzz/*.h $(BUILD)/libpsplice.a
	@mkdir -p $(@D)
	$(call say,CC,$@)
	$(Q)$(CC) $(APP_CFLAGS) $(SHARED_INC) $(LDFLAGS) -o $@ tests/fuzz/fz_main.c $(FUZZ_SRC) \
		$(BUILD)/libpsplice.a $(LDLIBS) -lutil

build-fuzz/fuzz_ops: tests/fuzz/fuzz_ops.c $(FUZZ_SRC) tests/fuzz/*.h build-fuzz/libpsplice.a
	$(call say,CC,$@)
	$(Q)clang $(BASE) $(SHARED_INC) -O1 -g -fsanitize=fuzzer $(FUZZ_CFLAGS) -o $@ $< $(FUZZ_SRC) \
		build-fuzz/libpsplice.a $(LDLIBS) -lutil

# The option fuzzer links every subcommand's parser, the benchmark's too,
# without the mains of psplice and psplice-bench.
FUZZ_TOOL_SRC := $(filter-out cli/psplice.c bench/psplice_bench.c,$(CLI_SRC) $(BENCH_SRC))
build-fuzz/fuzz_opts: tests/fuzz/fuzz_opts.c $(FUZZ_TOOL_SRC) $(CLI_HDR) bench/*.h src/shared/*.h build-fuzz/libpsplice.a
	$(call say,CC,$@)
	$(Q)clang $(BASE) -Icli -Ibench $(SHARED_INC) -O1 -g -fsanitize=fuzzer $(FUZZ_CFLAGS) -o $@ $< $(FUZZ_TOOL_SRC) \
		build-fuzz/libpsplice.a $(LDLIBS) -lm

# The parser harnesses link what the subcommands share, without them.
build-fuzz/fuzz_%: tests/fuzz/fuzz_%.c $(CLI_COMMON_SRC) $(wildcard cli/*.h) cli/relay/proxy_hdr.h build-fuzz/libpsplice.a
	$(call say,CC,$@)
	$(Q)clang $(BASE) -Icli $(SHARED_INC) -O1 -g -fsanitize=fuzzer $(FUZZ_CFLAGS) -o $@ $< $(CLI_COMMON_SRC) \
		build-fuzz/libpsplice.a $(LDLIBS) -lm

fuzz-lib:
	$(Q)$(MAKE) --no-print-directory BUILD=build-fuzz CC=clang OPT="-O1 -g" \
		SAN="$(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link" build-fuzz/libpsplice.a

fuzz-build: fuzz-lib
	$(Q)$(MAKE) --no-print-directory $(FUZZ_HARNESSES:%=build-fuzz/fuzz_%)

# Each harness from its seed corpus in the tree; what it finds new goes to
# build-fuzz/corpus, a crash to build-fuzz/crash-*.
fuzz fuzz-quick: fuzz-build
	$(Q)mkdir -p build-fuzz/scratch
	$(Q)for h in $(FUZZ_HARNESSES); do mkdir -p build-fuzz/corpus/$$h; \
		d=; [ ! -f tests/fuzz/$$h.dict ] || d=-dict=tests/fuzz/$$h.dict; \
		echo "fuzz_$$h: $(if $(filter fuzz,$@),$(FUZZ_TIME),$(FUZZ_QUICK_TIME)) s"; \
		$(FUZZ_RUN) build-fuzz/fuzz_$$h -max_total_time=$(if $(filter fuzz,$@),$(FUZZ_TIME),$(FUZZ_QUICK_TIME)) \
			-timeout=60 -rss_limit_mb=4096 -max_len=2048 -print_final_stats=1 $$d \
			-artifact_prefix=build-fuzz/ build-fuzz/corpus/$$h tests/fuzz/corpus/$$h \
			> build-fuzz/fuzz_$$h.log 2>&1 || { tail -40 build-fuzz/fuzz_$$h.log; exit 1; }; \
		grep -E '^(stat::number_of_executed_units|#[0-9]+.*DONE)' build-fuzz/fuzz_$$h.log | \
			sed 's/^/  /'; done
	$(Q)echo "fuzz: $(words $(FUZZ_HARNESSES)) passed, 0 failed, 0 skipped"

# Line coverage of src/ by FUZZ_SEEDS random sequences of the driver and
# 100 with pending bytes in memory (clang's source-based coverage,
# llvm-cov-14), over the files the driver links (not tee, sync,
# write-behind: outside the model).
fuzz-cover:
	$(Q)rm -rf build-cover/*.profraw
	$(Q)$(MAKE) --no-print-directory BUILD=build-cover CC=clang OPT="-O1 -g" \
		SAN="-fprofile-instr-generate -fcoverage-mapping" build-cover/tests/fuzz_driver
	$(Q)mkdir -p build-cover/scratch
	$(Q)LLVM_PROFILE_FILE=build-cover/fz-%p.profraw build-cover/tests/fuzz_driver \
		--seed 1 --count $(FUZZ_SEEDS) --time 600 --dir build-cover/scratch
	$(Q)LLVM_PROFILE_FILE=build-cover/fz-%p.profraw PSPLICE_MAX_PIPES=0 \
		build-cover/tests/fuzz_driver --seed 2 --count 100 --time 600 --dir build-cover/scratch
	$(Q)llvm-profdata-14 merge -o build-cover/fz.profdata build-cover/*.profraw
	$(Q)llvm-cov-14 report build-cover/tests/fuzz_driver -instr-profile=build-cover/fz.profdata \
		$(LIB_SRC) | tail -n 1 | awk '{ printf "src/ line coverage by %s sequences: %s of %s lines (%s)\n", \
		"$(FUZZ_SEEDS) + 100", $$8 - $$9, $$8, $$10 }'
