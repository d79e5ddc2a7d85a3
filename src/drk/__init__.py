"""drk: Dr. Kernel toolkit.

Stages (`drk collect`, `drk sft`, `drk rl`, `drk eval`, `drk infer`) talk through files on disk and share one
sandboxed evaluator, `drk.gym`. Importing `drk` is cheap: heavy libraries (torch, transformers, trl) are
imported inside the modules and commands that need them.
"""

__version__ = "0.1.0"
