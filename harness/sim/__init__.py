"""A discrete-event simulator of the sync and async pipelines (`harness simulate`, `harness plan`).

The rules are the runtime's own (trainer/rules/: admission, staleness drops and the books,
continuous batching, the replay policy's response spread); these modules keep the clock, the
event queue and what only a simulation needs.

| module | job |
|---|---|
| `distribution.py` | a distribution of seconds as up to 1000 equally likely values, resampled at random |
| `queue.py` | n servers fed from one FIFO queue (the gym pool), or by priority (cost-aware's gym queue) |
| `engine.py` | a continuously batching rollout engine's clock (its rule: trainer/rules/batching.py) |
| `stages.py` | accelerator stage times, from a hardware profile or from a run's spans |
| `pipeline.py` | the event loop: groups, their episodes and the trainer, by trainer/rules/buffer.py and schedule.py; tasks and fates |
"""
