"""`drk rl -c RECIPE` with the toy environment (drk.testing.toy_env) instead of the evaluator: the run that
tests/test_rl.py::test_killed_run_resumes_to_the_same_state kills mid-way.

    PYTHONPATH=src python tests/toy_rl_run.py RECIPE
"""
from __future__ import annotations

import sys
from pathlib import Path

from drk.stages import rl
from drk.testing.toy_env import toy_env

if __name__ == "__main__":
    rl.run(Path(sys.argv[1]), env=toy_env())
