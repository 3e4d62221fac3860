# softirq-rt lab.  `make lab` runs the main job, `make check` the tests.
# Debian's python3 is used on purpose: it sees Debian's numpy/scipy/matplotlib.
PY ?= /usr/bin/python3
VARIANTS ?=
SCENARIOS ?=
BOOTS ?= 2
NAME ?= lab
LAB = $(PY) -m lab
MATRIX = --variants "$(VARIANTS)" --scenarios "$(SCENARIOS)" --name "$(NAME)"

.PHONY: all lab compare check deps variants health accel clean help

all: help

help:
	@echo "make lab       build the variants, run the matrix, write the report"
	@echo "make compare   write the report again from existing results"
	@echo "make check     run the tests (unit tests, then boot tests)"
	@echo "make variants  build the variant kernels (cached)"
	@echo "make health    boot each variant and prove which kernel it is"
	@echo "make accel     say which accelerator guests use, and why"
	@echo "make deps      install the Debian packages the lab needs"
	@echo "VARIANTS=a,b SCENARIOS=x,y BOOTS=n narrow the matrix; NAME=n"
	@echo "names the report folder reports/<date>-<n>"

deps:
	@sh lab/deps.sh

variants: deps
	@$(LAB) build --variants "$(VARIANTS)"

health: deps
	@$(LAB) health --variants "$(VARIANTS)"

accel: deps
	@$(LAB) accel --variants "$(VARIANTS)"

# The main job: build, run every (variant, scenario, boot) not yet run,
# then write reports/<date>-$(NAME)/.  Stopped, it resumes where it was.
lab: deps
	@$(LAB) run $(MATRIX) --boots $(BOOTS)

compare: deps
	@$(LAB) compare $(MATRIX)

check: deps
	@$(PY) -m pytest -p no:cacheprovider -q lab/tests

clean:
	rm -rf build
