# softirq-rt lab.  `make lab` runs the main job, `make check` the tests.
# Debian's python3 is used on purpose: it sees Debian's numpy/scipy/matplotlib.
PY ?= /usr/bin/python3
VARIANTS ?=
SCENARIOS ?=
# BOOTS=n: a fixed number of boots a cell; without it, `make lab` boots
# each cell 5 times and 10 where the first look leaves it undecided
BOOTS ?=
# JOBS=n guests at once; without it, the host's cores (below)
JOBS ?=
# whether NAME was given on the command line: `make variant` without it
# once made variants/lab (a NAME in the environment, as some systems set
# to the host's name, is not one)
NAME_GIVEN := $(if $(filter command line,$(origin NAME)),yes)
NAME ?= lab
FROM ?=
VARIANT ?=
A ?=
B ?=
REPORTS ?=
# RUNNER=lava runs the matrix as LAVA jobs (lab/docs/lava.md): on the
# server of lavacli identity LAVA_IDENTITY, or LAVA_URI
# (http://user:token@host/RPC2); jobs from LAVA_TEMPLATE.
RUNNER ?= local
LAVA_IDENTITY ?= default
LAVA_URI ?=
LAVA_TEMPLATE ?= qemu
LAVA_DEVICE_TYPE ?= x86
LAVA_ARTIFACTS ?=
LAVA_ARTIFACTS_URL ?=
# the QEMU the workers have: auto, lab (`make qemu-deb` installed) or debian
LAVA_QEMU ?= auto
# MEDIUM=setting: the guests' virtual time, e.g. parallel-8ns (one results
# folder a medium: build/results-<setting>; lab/docs/medium.md)
MEDIUM ?=

# The variables above reach the lab as data, byte for byte: make takes
# each as it was given ($(value): a `$(...)` in it stays text, never a
# make function), exports it, and every recipe reads it from the
# environment in double quotes ("$$NAME"), so that the shell runs
# nothing in it either (a name with `...` or ";touch x;" in it once ran
# that: issue 53).  REPORTS, a list, is split at blanks with globbing
# off (set -f).
USER_VARIABLES = VARIANTS SCENARIOS BOOTS JOBS NAME FROM VARIANT A B \
	REPORTS RUNNER LAVA_IDENTITY LAVA_URI LAVA_TEMPLATE LAVA_DEVICE_TYPE \
	LAVA_ARTIFACTS LAVA_ARTIFACTS_URL LAVA_QEMU MEDIUM
$(foreach v,$(USER_VARIABLES),$(eval override $(v) := $$(value $(v))))
override JOBS := $(if $(JOBS),$(JOBS),$(shell nproc))
export $(USER_VARIABLES)

LAB = $(PY) -m lab
MATRIX = --variants "$$VARIANTS" --scenarios "$$SCENARIOS" --name "$$NAME" \
	--medium "$$MEDIUM"
RUNNER_OPTS = --runner "$$RUNNER" --lava-identity "$$LAVA_IDENTITY" \
	--lava-uri "$$LAVA_URI" --lava-template "$$LAVA_TEMPLATE" \
	--lava-device-type "$$LAVA_DEVICE_TYPE" \
	--lava-artifacts "$$LAVA_ARTIFACTS" \
	--lava-artifacts-url "$$LAVA_ARTIFACTS_URL" --lava-qemu "$$LAVA_QEMU"
LAVA_CLIENT = $(if $(filter lava,$(RUNNER)),lavacli)
# A LAVA instance on this machine: `make lava-local`, and `make check`.
LAVA_LOCAL = lava-server lava-dispatcher lavacli postgresql

.PHONY: all lab compare check test deps deps-lava lava-local lava-local-down \
	variants health accel clean help variant mail replicate power pool attribute \
	check-all qemu-deb calibrate

all: help

help:
	@echo "make lab       build the variants, run the matrix, write the report"
	@echo "make compare   write the report again from existing results"
	@echo "make check     run the tests (unit tests, then boot tests of the"
	@echo "               default matrix's 6.1 kernels; every series unbuilt)"
	@echo "make check-all the same, booting every variant"
	@echo "make test      the unit tests only (under a minute)"
	@echo "make variants  build the variant kernels (cached)"
	@echo "make health    boot each variant and prove which kernel it is"
	@echo "make accel     say which accelerator guests use, and why"
	@echo "make variant NAME=n FROM=s  variant n from a series (mbox, folder"
	@echo "               of patches or Message-ID)"
	@echo "make mail NAME=n  the report reports/<date>-n as reply.eml"
	@echo "make replicate A=r B=s  two reports: made alike? verdicts agree?"
	@echo "make pool REPORTS=\"r s\" NAME=n  repeat reports of one plan, boots together"
	@echo "make power REPORTS=\"r s\"  how often two runs would disagree, at 5/10/15 boots"
	@echo "make calibrate REPORTS=\"r s\"  the rules' error rates: false findings, sensitivity"
	@echo "make attribute VARIANT=v SCENARIOS=x,y  which patch of v's series"
	@echo "               brings each effect (every prefix run)"
	@echo "make deps      install the Debian packages the lab needs"
	@echo "make qemu-deb  the lab's QEMU as a .deb for LAVA workers"
	@echo "make lava-local  start a LAVA instance on this machine"
	@echo "VARIANTS=a,b SCENARIOS=x,y BOOTS=n narrow the matrix; NAME=n"
	@echo "JOBS=n guests at once (default: the host's cores)"
	@echo "names the report folder reports/<date>-<n>; RUNNER=lava"
	@echo "LAVA_IDENTITY=i runs it through LAVA (lab/docs/lava.md)"

deps:
	@sh lab/deps.sh $(LAVA_CLIENT)

deps-lava:
	@sh lab/deps.sh $(LAVA_LOCAL)

lava-local: deps-lava
	@$(LAB) lava-local up

# Debian's qemu-system-x86 with the lab's QEMU in it (into the cache),
# for LAVA workers: lab/docs/lava.md.
qemu-deb: deps
	@$(LAB) qemu-deb

lava-local-down:
	@$(LAB) lava-local down

variants: deps
	@$(LAB) build --variants "$$VARIANTS"

health: deps
	@$(LAB) health --variants "$$VARIANTS"

accel: deps
	@$(LAB) accel --variants "$$VARIANTS"

# The main job: build, run every (variant, scenario, boot) not yet run,
# then write reports/<date>-$(NAME)/.  Stopped, it resumes where it was.
lab: deps
	@$(LAB) run $(MATRIX) $(if $(BOOTS),--boots "$$BOOTS") --jobs "$$JOBS" \
		$(RUNNER_OPTS)

variant: deps
	@if [ -z "$(NAME_GIVEN)" ]; then \
		echo "make variant: NAME=<name> names the new variant" \
			"(variants/<name>/)" >&2; exit 2; fi
	@$(LAB) variant add "$$NAME" --from "$$FROM"

# Every prefix of a variant's series against its base: which patch
# brings each effect (report reports/<date>-attribute-<VARIANT>).
attribute: deps
	@$(LAB) attribute "$$VARIANT" --scenarios "$$SCENARIOS" \
		$(if $(BOOTS),--boots "$$BOOTS") --jobs "$$JOBS" \
		$(if $(filter-out lab,$(NAME)),--name "$$NAME")

mail: deps
	@$(LAB) mail --name "$$NAME" $(if $(VARIANT),--variant "$$VARIANT")

# Two reports side by side (reports/<name> or a folder): what differs
# in how they were made, whether they are a repeat, which verdicts agree.
replicate:
	@$(LAB) replicate "$$A" "$$B"

# How often two runs of these reports' plan would disagree on each
# comparison, at 5, 10 and 15 boots a cell (lab/docs/statistics.md).
power:
	@set -f; $(LAB) power $$REPORTS

# The verdict rules' measured error rates over these reports: false
# findings (relabelled boots, the A/A control) and sensitivity (injected
# and real known effects); NAME=n also writes reports/<date>-n/.
calibrate:
	@set -f; $(LAB) calibrate $$REPORTS \
		$(if $(filter-out lab,$(NAME)),--name "$$NAME")

# Repeat reports of one plan as one report of all their boots.
pool:
	@set -f; $(LAB) pool $$REPORTS --name "$$NAME"

compare: deps
	@$(LAB) compare $(MATRIX) --runner "$$RUNNER"

PYTEST = LAB_TEST_VARIANTS="$$VARIANTS" $(PY) -m pytest -p no:cacheprovider -q

# The host side's unit tests only: no kernel build, no guest, no LAVA.
test:
	@$(PYTEST) -n "$$JOBS" lab/tests -m "not guest"

# The tests include an end-to-end run through a local LAVA.  The boot and
# mechanism tests run in the default matrix's 6.1 variants, so that a
# fresh machine builds one kernel tree (every variant's series is applied
# and checked unbuilt); VARIANTS=all (check-all, or a list) runs them in
# those.  JOBS pytest workers (pytest-xdist) boot
# guests side by side; a module whose tests share one fixture (a traced
# run, the LAVA instance) stays on one worker (xdist_group).  Tests
# marked host_alone (a NIC fed from the host) run after them, alone, as
# the lab runs those scenarios.
check: deps-lava
	@$(PYTEST) -n "$$JOBS" --dist loadgroup -m "not host_alone" lab/tests && \
	$(PYTEST) -m host_alone lab/tests

check-all:
	@$(MAKE) --no-print-directory check VARIANTS=all

clean:
	rm -rf build
