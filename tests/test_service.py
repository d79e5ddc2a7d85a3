"""Scale-out backends on CPU: the HTTP service end to end (good kernel, hang, crash, malformed JSON), the
HTTP client backend, the evaluation cache, and the Ray backend on a local Ray.

    .venv/bin/python -m pytest tests/test_service.py -q
"""
from __future__ import annotations

import socket
import threading
import time
from concurrent.futures import Future
from contextlib import contextmanager

import httpx
import pytest
from conftest import ROOT

from drk.gym import EvalOptions, EvalRequest, LocalPool
from drk.gym.transport.backends import HttpGym, make_gym
from drk.gym.transport.cache import CachedGym, content_key, environment_of
from drk.gym.types import EvalResult
from drk.tasks import task_from_file

TASK = task_from_file(ROOT / "data/queries/001_scaled_tanh_bias.py")
GOOD = (ROOT / "data/query_solutions/001_scaled_tanh_bias.py").read_text()
HANG = (ROOT / "tests/corpus/hang_loop.py").read_text()
SEGV = (ROOT / "tests/corpus/crash_segfault.py").read_text()
OPTS = {"device": "cpu", "input_budget_mb": 0.25}


def req_json(source: str, **opts) -> dict:
    return EvalRequest(TASK, source, EvalOptions(**{**OPTS, **opts})).to_dict()


@contextmanager
def running_server(app):
    """`app` served by uvicorn on 127.0.0.1 (a free port) in a thread; yields its URL, stops on exit."""
    import uvicorn

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    srv = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", proxy_headers=False))
    t = threading.Thread(target=srv.run, daemon=True)
    t.start()
    url = f"http://127.0.0.1:{port}"
    for _ in range(200):
        try:
            if httpx.get(f"{url}/health").status_code == 200:
                break
        except httpx.HTTPError:
            time.sleep(0.05)
    try:
        yield url
    finally:
        srv.should_exit = True
        t.join(timeout=10)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    from drk.gym.transport.server import make_app

    pool = LocalPool(device="cpu", workers=2, cache_dir=str(tmp_path_factory.mktemp("c")), slack_s=60)
    with running_server(make_app(pool, EvalOptions(**OPTS))) as url:
        yield url
    pool.close()


def poll(url: str, job: str, timeout: float = 120) -> dict:
    end = time.time() + timeout
    while time.time() < end:
        r = httpx.get(f"{url}/v1/result/{job}")
        if r.status_code == 200:
            return r.json()
        assert r.status_code == 202
        time.sleep(0.1)
    raise AssertionError("no result")


@pytest.fixture(scope="module")
def adversity(server):
    """A hang (8 s timeout), a segfault and a correct kernel submitted at once to the two-worker server; the
    tests below read their results (the first runs while the hang still holds a worker): job ids by name."""
    return {name: httpx.post(f"{server}/v1/submit", json={"request": req_json(src, **kw)}).json()["job_id"]
            for name, src, kw in [("hang", HANG, {"timeout_s": 8}), ("segv", SEGV, {}), ("good", GOOD, {})]}


@pytest.mark.slow
def test_service_answers_and_refuses_garbage_while_a_worker_hangs(server, adversity):
    assert httpx.get(f"{server}/health").json()["status"] == "healthy"
    assert httpx.post(f"{server}/v1/submit", content=b"{not json").status_code == 400
    assert httpx.post(f"{server}/v1/submit", json={"request": {"task": {}, "source": 3}}).status_code == 422
    assert httpx.post(f"{server}/v1/submit", json=[1, 2]).status_code == 400
    assert httpx.get(f"{server}/v1/result/nope").status_code == 404


@pytest.mark.slow
@pytest.mark.parametrize("name, verdict", [("good", "ok"), ("segv", "crashed"), ("hang", "timeout")])
def test_service_gives_each_job_its_own_verdict(server, adversity, name, verdict):
    assert poll(server, adversity[name])["verdict"] == verdict


@pytest.mark.slow
def test_service_slot_that_hung_serves_again(server, adversity):
    poll(server, adversity["hang"])
    job = httpx.post(f"{server}/v1/submit", json={"request": req_json(GOOD)}).json()["job_id"]
    assert poll(server, job)["verdict"] == "ok"


@pytest.mark.slow
def test_service_metrics_count_the_jobs_and_the_timeout(server, adversity):
    for job in adversity.values():
        poll(server, job)
    m = httpx.get(f"{server}/metrics").json()
    assert m["counters"]["completed"] >= 3 and m["counters"]["verdict_timeout"] >= 1 and "p50_s" in m["latency"]


def test_http_backend_and_batch(server):
    gym = HttpGym(server)
    reqs = [EvalRequest(TASK, GOOD, EvalOptions(**OPTS)), EvalRequest(TASK, "def broken(:", EvalOptions(**OPTS))]
    res = gym.evaluate_batch(reqs)
    assert [r.verdict for r in res] == ["ok", "compile_error"]
    # /health reports the workers' environments (the evaluation cache keys on them)
    envs = httpx.get(f"{server}/health").json()["environments"]
    assert environment_of(res[0].device, res[0].versions) in envs and '"device": "cpu"' in envs[0]
    b = httpx.post(f"{server}/v1/batch", json={"requests": [req_json(GOOD)]}, timeout=120).json()
    assert b["results"][0]["verdict"] == "ok"
    gym.close()
    with pytest.raises(Exception, match="no drk gym service"):
        make_gym("http://127.0.0.1:9")


@pytest.mark.slow
def test_eval_cache_hits(tmp_path):
    with LocalPool(device="cpu", workers=1, cache_dir=str(tmp_path)) as pool:
        gym = CachedGym(pool, str(tmp_path / "cache.sqlite"))
        req = EvalRequest(TASK, GOOD, EvalOptions(**OPTS))
        t0 = time.time()
        first = gym.evaluate_batch([req, req])          # a duplicate inside one batch runs once
        t1 = time.time()
        again = gym.evaluate(EvalRequest(TASK, GOOD, EvalOptions(**OPTS), solution="other"))
        t2 = time.time()
        assert [r.verdict for r in first] == ["ok", "ok"] and again.verdict == "ok"
        assert gym.misses == 1 and gym.hits == 2
        assert again.phase_seconds.get("cache_hit") == 1.0 and again.solution == "other"
        assert t2 - t1 < 0.25 * (t1 - t0)
        # a different protocol is a different entry; timeouts are never cached
        gym.evaluate(EvalRequest(TASK, GOOD, EvalOptions(**{**OPTS, "trials": 2})))
        assert gym.misses == 2
        hang = EvalRequest(TASK, HANG, EvalOptions(**OPTS, timeout_s=5))
        assert gym.evaluate(hang).verdict == "timeout"
        assert gym.cache.get(content_key(hang), gym.environments()) is None
        assert gym.cache.get(content_key(req), gym.environments()).verdict == "ok"


class FakeBackend:
    """Answers every request at once with a result measured on `gpu` (`None`: a hardware-free static
    failure); `announces` says whether it reports its environment up front, as LocalPool and HttpGym do."""

    def __init__(self, gpu: str | None, announces: bool = True) -> None:
        self.gpu, self.calls = gpu, 0
        if announces:
            self.environment = lambda: {environment_of("cuda:0", self.versions())}

    def versions(self) -> dict:
        return {"gpu": self.gpu, "torch": "2.11.0", "triton": "3.6.0"} if self.gpu else {}

    def submit(self, req: EvalRequest) -> Future:
        self.calls += 1
        fut: Future = Future()
        fut.set_result(EvalResult(task=req.task.id, verdict="ok" if self.gpu else "compile_error",
                                  device="cuda:0", versions=self.versions(), speedup=1.5 if self.gpu else None))
        return fut


def test_eval_cache_never_answers_with_another_machines_numbers(tmp_path):
    """One cache file shared by an H100 node and an H200 node: each sees only its own GPU's results."""
    path = str(tmp_path / "shared.sqlite")
    req = EvalRequest(TASK, GOOD, EvalOptions(**{**OPTS, "device": "cuda"}))
    h100 = CachedGym(FakeBackend("NVIDIA H100 80GB HBM3"), path)
    h100.evaluate_batch([req])
    h200 = CachedGym(FakeBackend("NVIDIA H200"), path)
    assert h200.evaluate(req).phase_seconds.get("cache_hit") is None and h200.backend.calls == 1
    again = CachedGym(FakeBackend("NVIDIA H100 80GB HBM3"), path)
    assert again.evaluate(req).phase_seconds.get("cache_hit") == 1.0 and again.backend.calls == 0
    # a backend that does not announce its environment (Ray) learns it from its first results
    ray_like = CachedGym(FakeBackend("NVIDIA H200", announces=False), path)
    ray_like.evaluate(req)
    ray_like.evaluate(req)
    assert ray_like.backend.calls == 1 and ray_like.hits == 1
    # a result no worker made (a static-check failure) answers on any machine
    broken = EvalRequest(TASK, "def broken(:", EvalOptions(**OPTS))
    CachedGym(FakeBackend(None), path).evaluate(broken)
    assert CachedGym(FakeBackend("NVIDIA H200"), path).evaluate(broken).verdict == "compile_error"


@pytest.mark.slow
def test_ray_backend_on_local_ray(tmp_path):
    ray = pytest.importorskip("ray")
    from drk.gym.transport.ray_backend import RayGym

    gym = RayGym(None, device="cpu", workers=2, cache_dir=str(tmp_path), num_cpus=2, slack_s=60)
    try:
        res = gym.evaluate_batch([EvalRequest(TASK, GOOD, EvalOptions(**OPTS)),
                                  EvalRequest(TASK, SEGV, EvalOptions(**OPTS)),
                                  EvalRequest(TASK, HANG, EvalOptions(**OPTS, timeout_s=8))])
        assert [r.verdict for r in res] == ["ok", "crashed", "timeout"]
        assert gym.evaluate(EvalRequest(TASK, GOOD, EvalOptions(**OPTS))).verdict == "ok"
        # close() also stops an actor that is busy (here in a hang), not only the idle ones
        busy = gym.submit(EvalRequest(TASK, HANG, EvalOptions(**OPTS, timeout_s=60)))
        end = time.time() + 30
        while len(gym._free) == gym.workers and time.time() < end:
            time.sleep(0.1)
        actors = list(gym._actors)
        assert len(gym._free) < gym.workers and len(actors) == gym.workers
        gym.close()
        for a in actors:
            with pytest.raises(ray.exceptions.RayActorError):
                ray.get(a.stop.remote(), timeout=30)
        res = busy.result(timeout=60)  # its waiting thread is released, not left blocked until the deadline
        assert res.verdict == "infra_error" and "shut down" in res.error  # never the candidate's verdict
    finally:
        gym.close()
        ray.shutdown()


def test_cached_submit_does_not_block_and_stores(tmp_path):
    """CachedGym.submit hands misses to the backend's own submit (the server calls it from its event loop)."""
    with LocalPool(device="cpu", workers=1, cache_dir=str(tmp_path)) as pool:
        gym = CachedGym(pool, str(tmp_path / "cache.sqlite"))
        t0 = time.time()
        fut = gym.submit(EvalRequest(TASK, GOOD, EvalOptions(**OPTS)))
        assert time.time() - t0 < 1.0 and not fut.done()
        assert fut.result().verdict == "ok" and gym.misses == 1
        again = gym.submit(EvalRequest(TASK, GOOD, EvalOptions(**OPTS)))
        assert again.done() and again.result().phase_seconds.get("cache_hit") == 1.0 and gym.hits == 1
