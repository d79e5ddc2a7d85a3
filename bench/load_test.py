"""Load test of `drk gym serve` on loopback (a benchmark, not a test).

    PYTHONPATH=src python bench/load_test.py --requests 500 --clients 32 --workers 2 --out docs/measurements/service-load.json

Starts `drk gym serve --device cpu` in a subprocess, then CLIENTS threads submit REQUESTS evaluations in
total (small kernels, each distinct so nothing is cached) and poll for their results. Every request must
come back with a verdict; reports end-to-end latency percentiles, throughput and verdict counts, and checks
the server still answers /health.
"""
from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))


def free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def main() -> None:
    from drk.gym import EvalOptions, EvalRequest
    from drk.tasks import task_from_file

    ap = argparse.ArgumentParser()
    ap.add_argument("--requests", type=int, default=500)
    ap.add_argument("--clients", type=int, default=32)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--out", type=Path, default=None)
    a = ap.parse_args()
    port = free_port()
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    srv = subprocess.Popen([sys.executable, "-m", "drk", "gym", "serve", "--device", "cpu", "--workers",
                            str(a.workers), "--port", str(port), "--input-budget-mb", "0.05"], env=env,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(600):
            try:
                if httpx.get(f"{url}/health").status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.1)
        task = task_from_file(ROOT / "data/queries/001_scaled_tanh_bias.py")
        base = (ROOT / "data/query_solutions/001_scaled_tanh_bias.py").read_text()
        lock = threading.Lock()
        latencies, verdicts, errors = [], {}, []
        next_i = iter(range(a.requests))

        def client() -> None:
            c = httpx.Client(timeout=60)
            while True:
                with lock:
                    i = next(next_i, None)
                if i is None:
                    return
                src = base + f"\n# request {i}\n"  # distinct sources: no cache effects
                req = EvalRequest(task, src, EvalOptions(device="cpu", trials=1, timeout_s=120), request_id=f"r{i}")
                t0 = time.time()
                try:
                    job = c.post(f"{url}/v1/submit", json={"request": req.to_dict()}).json()["job_id"]
                    while True:
                        r = c.get(f"{url}/v1/result/{job}")
                        if r.status_code == 200:
                            v = r.json()["verdict"]
                            break
                        time.sleep(0.05)
                except Exception as e:
                    with lock:
                        errors.append(repr(e))
                    continue
                with lock:
                    latencies.append(time.time() - t0)
                    verdicts[v] = verdicts.get(v, 0) + 1

        t0 = time.time()
        threads = [threading.Thread(target=client) for _ in range(a.clients)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        wall = time.time() - t0
        lat = sorted(latencies)
        q = lambda p: lat[min(len(lat) - 1, int(p * len(lat)))]  # noqa: E731
        report = {"requests": a.requests, "clients": a.clients, "workers": a.workers, "answered": len(lat),
                  "lost": a.requests - len(lat), "errors": errors[:5], "verdicts": verdicts, "wall_s": wall,
                  "throughput_per_s": len(lat) / wall, "latency_s": {"p50": q(0.5), "p90": q(0.9), "p99": q(0.99),
                                                                     "max": lat[-1], "mean": statistics.fmean(lat)},
                  "health_after": httpx.get(f"{url}/health").json(), "metrics": httpx.get(f"{url}/metrics").json()}
        print(json.dumps(report, indent=1))
        if a.out:
            a.out.parent.mkdir(parents=True, exist_ok=True)
            a.out.write_text(json.dumps(report, indent=1))
    finally:
        srv.terminate()
        srv.wait(timeout=30)


if __name__ == "__main__":
    main()
