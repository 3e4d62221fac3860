# softirq-rt lab.  `make lab` runs the main job, `make check` the tests.
# Debian's python3 is used on purpose: it sees Debian's numpy/scipy/matplotlib.
PY ?= /usr/bin/python3
VARIANTS ?=
LAB = $(PY) -m lab

.PHONY: all lab check deps variants health accel clean help

all: help

help:
	@echo "make lab       build every variant, boot each, report (main job)"
	@echo "make check     run the tests (unit tests, then boot tests)"
	@echo "make variants  build the variant kernels (cached)"
	@echo "make health    boot each variant and prove which kernel it is"
	@echo "make accel     say which accelerator guests use, and why"
	@echo "make deps      install the Debian packages the lab needs"
	@echo "VARIANTS=a,b narrows any of these to some variants"

deps:
	@sh lab/deps.sh

variants: deps
	@$(LAB) build --variants "$(VARIANTS)"

health: deps
	@$(LAB) health --variants "$(VARIANTS)"

accel: deps
	@$(LAB) accel --variants "$(VARIANTS)"

# Until the comparison matrix lands, the main job builds and boots every
# variant and prints one health line per variant.
lab: deps
	@$(LAB) health --variants "$(VARIANTS)"

check: deps
	@$(PY) -m pytest -p no:cacheprovider -q lab/tests

clean:
	rm -rf build
