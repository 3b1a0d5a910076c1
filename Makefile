# The two commands of the README. Each one sets up what it needs first (scripts/setup.sh).
.PHONY: setup test benchmark

setup:
	@bash scripts/setup.sh

test: setup
	.venv/bin/python -m pytest

benchmark: setup
	.venv/bin/harness benchmark --gym verilog
