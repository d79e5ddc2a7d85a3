"""`ServeConfig`: every option of `drk gym serve`, each field its recipe key and (dashed) its flag, the comment
its --help line; the request maxima (`Limits`) are a flat section (`--max-trials`, recipe key `max_trials`).

Apart from drk.gym.transport.server (which imports fastapi) so that `drk --help` builds the options instantly.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from drk.config import option
from drk.gym.transport.limits import Limits


@dataclass
class ServeConfig:
    host: str = option("127.0.0.1", panel="out")  # address to listen on; a non-loopback one needs --allow and/or --token-env
    port: int = option(10907, panel="out")  # TCP port to listen on
    backend: str = option("local", panel="eval")  # local (warm workers here) | ray | ray://HOST:PORT
    device: str = option("auto", panel="eval")  # cuda | cpu (Triton interpreter, scaled shapes) | auto
    workers: int | None = option(None, panel="eval", min=1)  # evaluation workers (default: one per GPU; CPU: up to 4)
    eval_cache: Path | None = option(None, panel="eval")  # SQLite evaluation cache: identical candidates are evaluated once
    timeout_s: float = option(300.0, flag="--timeout", panel="eval")  # default seconds per evaluation (a request may ask for up to --max-timeout)
    input_budget_mb: float | None = option(None, panel="eval")  # default input budget per evaluation, in MB (None: the evaluator's)
    allow: str | None = option(None, panel="access")  # client addresses admitted without a token: CIDR[,CIDR...]
    token_env: str | None = option(None, panel="access")  # environment variable holding the bearer token clients must send (drk clients: DRK_GYM_TOKEN)
    limits: Limits = option(factory=Limits, flat=True, panel="limits",
                            flags={"max_timeout_s": "--max-timeout"})  # what one request may ask for, and how many
