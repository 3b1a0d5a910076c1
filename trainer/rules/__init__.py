"""The rules the pipeline runs by, written once: the runtime (trainer/buffer.py and the replay
policy, under their locks and threads) and the simulator (harness/sim/, on its clock) both call
them, so a simulated run follows the rules of a real one.

| module | rules |
|---|---|
| `buffer.py` | admission, staleness drops, and the books they keep (trajectories by fate) |
| `batching.py` | continuous batching: which requests share an engine call, and how long it lasts |
| `placement.py` | where the accelerator stages run: colocated or disaggregated, and how accelerators become engines and trainers |
| `answers.py` | the replay policy's answers: which candidate, the mix a cost card is weighted to, a response's length |
| `context.py` | the growing conversation: a feedback message's estimated tokens, each turn's prompt, the one sequence trained, the prefill charged |
| `cost.py` | a task's predicted gym time per trajectory: the run's own observations shrunk towards a prior (a cost card's figure, else the gym's mean) |

Pure functions and frozen dataclasses only: no clocks, no threads, no I/O.
"""
