"""heavygym and OpenEnv, both ways.

- `harness serve GYM` serves any heavygym gym as an OpenEnv environment (`server.py`, with the
  schema in `protocol.py` and a typed client in `client.py`).
- The `openenv` gym (`adapter.py`) is any OpenEnv environment as a heavygym gym, for
  `harness benchmark` and `harness gyms check`.

Only the adapter's class is imported here, and it imports OpenEnv when used: the registry can
list the gym where the optional `openenv` extra is not installed (docs/openenv.md).
"""
