"""The `harness` command line: check, profile and benchmark gyms."""
