"""A discrete-event simulator of the sync and async pipelines (`harness simulate`, `harness plan`).

| module | job |
|---|---|
| `distribution.py` | a distribution of seconds as up to 1000 equally likely values, resampled at random |
| `queue.py` | n servers fed from one FIFO queue (the gym pool) |
| `engine.py` | a continuously batching rollout engine, by trainer/policies/batching.py's rule |
| `stages.py` | accelerator stage times, from a hardware profile or from a run's spans |
| `pipeline.py` | the event loop: admission, episodes of rollout groups, the trainer, as trainer/ does them |
"""
