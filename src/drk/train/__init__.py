"""The RL library the `drk rl` stage (`drk.stages.rl`) is built on: the objective's math (`algos`), the
released trainer's selection rules (`selection`) and per-turn training rows (`batch`). It never imports a
stage."""
