# The two commands of the README. Each one sets up what it needs first (scripts/setup.sh).
.PHONY: setup test benchmark

setup:
	@bash scripts/setup.sh

test: setup
	.venv/bin/python -m pytest

# The heavy regime: the verilog gym's heavy suite (seconds of simulation per check), where the
# gym is most of the synchronous trainer's wait; 5 steps of 2 x 4 keep it within 10 minutes on
# 2 cores, set-up included (README).
benchmark: setup
	.venv/bin/harness benchmark --gym verilog -o suite=heavy --steps 5 --batch 2
