"""What checks an answer before and around its bench: the code's extraction (`extract.py`), the
lexical screen and pyslang (`screen.py`, `precheck.py`), and the tools that build and simulate
it in the sandbox (`simulators.py`, `toolchain.py`, the compiler cache's warm-up `prebuild.py`)."""
