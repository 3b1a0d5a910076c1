# The two commands of the README. Each one sets up what it needs first (scripts/setup.sh).
.PHONY: setup test benchmark

setup:
	@bash scripts/setup.sh

# Two test processes by default: a serial run kept about one of two cores busy, so a second
# process has a core to use. A file stays on one process (--dist loadfile), so its module
# fixtures start once; files with a slow test go first (tests/conftest.py; xdist would
# otherwise reorder files by their number of tests). TEST_WORKERS=0
# runs serially.
TEST_WORKERS ?= 2
# With the docker extra, the tests run beside a Docker daemon: the one that answers, else one
# started for them and stopped after (scripts/dockerd.sh around).
WITH_DOCKERD = $(if $(findstring docker,$(HEAVYGYM_EXTRAS)),bash scripts/dockerd.sh around,)
test: setup
	$(WITH_DOCKERD) .venv/bin/python -m pytest -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder

# The heavy regime: the verilog gym's heavy suite (seconds of simulation per check), where the
# gym is most of the synchronous trainer's wait; 5 steps of 2 x 4 keep it within 10 minutes on
# 2 cores, set-up included (README).
benchmark: setup
	.venv/bin/harness benchmark --gym verilog -o suite=heavy --steps 5 --batch 2
