"""One module per `harness` command (harness/cli.py lists them)."""
