"""Builds and installs the wasm Lean for the lean gym (scripts/install-lean-wasm.sh); not part of
the runtime packages: the gym only finds what it installed (`gyms/lean/location.py`)."""
