"""What a candidate's own namespaces cost at its start (root only): the fork server's probe child (fork into a
new pid namespace, own mount namespace and /proc, exit), timed without and with the frozen copies of the
host-wide counters mounted over their files (`zygote.freeze_counters`).

    sudo .venv/bin/python bench/candidate_namespace_cost.py
"""
from __future__ import annotations

import statistics
import tempfile
import time

from drk.gym.sandbox import zygote


def median_ms(ns: zygote.PidNamespaces, n: int = 30) -> float:
    ts = []
    for _ in range(n):
        t0 = time.perf_counter()
        if ns._try():
            raise SystemExit("the probe child failed: run as root on a host that allows pid namespaces")
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts) * 1e3


def main() -> None:
    ns = zygote.PidNamespaces("root")
    if ns.gap:
        raise SystemExit(f"no pid namespace per candidate here: {ns.gap}")
    base = median_ms(ns)
    zygote._FROZEN.update(zygote.freeze_counters(tempfile.mkdtemp(prefix="drk-gym-frozen-")))
    frozen = median_ms(ns)
    print(f"frozen files and folders: {len(zygote._FROZEN)}; probe child (fork, own /proc): {base:.1f} ms median; "
          f"with the frozen copies mounted: {frozen:.1f} ms")


if __name__ == "__main__":
    main()
