"""How `fair-forge` starts as a process of its own: no cyclic garbage collection until the judging.

Starting `fair-forge evaluate` on a LangChain judge imports LangChain, the provider's SDK,
pydantic and this package: about 150,000 objects that live as long as the process. Every
collection during that start-up walks them and frees nothing (the imports make no garbage),
and so does the interpreter's collection at exit; for 100 turns that is about 0.4 s of a 2 s
command (benchmarks/RESULTS.md, "No garbage collection during start-up").

So `console_main` (the `fair-forge` script and `python -m fair_forge_core`) starts with the
collector off, and `end_startup` turns it back on when the work begins: for `evaluate` once the
request is read and its judges are built, just before the first judge call
(`cli.common.run_evaluation`); for every other command as soon as its arguments are parsed.
`end_startup` first freezes everything allocated so far (`gc.freeze`: those objects are never
walked again, neither by the judging's collections nor by the collection at exit). Collection
then runs as usual for the rest of the process: the judging's garbage is collected as ever.

`main` called any other way (the tests, a user's script, the pytest plugin) is untouched: the
collector was never paused, so `end_startup` does nothing and freezes nothing.
"""

from __future__ import annotations

import gc

_paused = [False]
"""Whether `pause_startup_collection` turned the collector off and `end_startup` has yet to turn it
back on: a one-element list, so the two functions share it without `global`."""


def pause_startup_collection() -> None:
    """Turn the cyclic garbage collector off for the start-up; nothing if it is already off
    (someone else paused it, and turns it back on)."""
    if gc.isenabled():
        gc.disable()
        _paused[0] = True


def end_startup() -> None:
    """Freeze what the start-up allocated and turn the collector back on, if
    `pause_startup_collection` turned it off; otherwise nothing. Called more than once, only the
    first call does anything."""
    if _paused[0]:
        _paused[0] = False
        gc.freeze()
        gc.enable()
