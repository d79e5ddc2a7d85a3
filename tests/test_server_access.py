"""Who reaches `drk gym serve` and what a request can make it do: binds, allowlist, tokens, body limit,
server-side maxima, back-pressure, the option allow-list, task_id ownership, refusals in /metrics.

Loopback only: 127.0.0.1 and 127.0.0.2 are two distinct client addresses of one server on 127.0.0.1.

    .venv/bin/python -m pytest tests/test_server_access.py -q
"""
from __future__ import annotations

import dataclasses
import logging
import time
from concurrent.futures import Future

import httpx
import pytest
from test_service import GOOD, HANG, OPTS, TASK, req_json, running_server
from typer.testing import CliRunner

from drk.gym import EvalOptions, LocalPool
from drk.gym.transport.access import AccessPolicy, parse_allow
from drk.gym.transport.backends import GymUnavailable, HttpGym
from drk.gym.transport.limits import CLIENT_OPTIONS, Limits
from drk.gym.transport.server import make_app
from drk.gym.types import EvalResult

TOKEN = "t0k-" + "x" * 28


class Recorder:
    """A backend that records what reaches it; `hold` keeps every job unfinished until `release()`."""

    device, workers = "cpu", 1

    def __init__(self, hold: bool = False) -> None:
        self.hold, self.requests, self.futures = hold, [], []

    def submit(self, req) -> Future:
        fut: Future = Future()
        self.requests.append(req)
        self.futures.append(fut)
        if not self.hold:
            fut.set_result(EvalResult(task=req.task.id, verdict="compile_error", error="SyntaxError: x"))
        return fut

    def release(self) -> None:
        for f in self.futures:
            if not f.done():
                f.set_result(EvalResult(task="t", verdict="compile_error"))


def client(address: str, **kw) -> httpx.Client:
    return httpx.Client(transport=httpx.HTTPTransport(local_address=address), timeout=30, **kw)


def kg_body(task_id: str, kernel: str = "def broken(:\n    pass", **extra) -> dict:
    return {"task_id": task_id, "reference_code": TASK.source, "kernel_code": kernel, "entry_point": "Model",
            **extra}


def test_non_loopback_bind_without_allow_or_token_does_not_start(monkeypatch):
    from drk.cli import app

    monkeypatch.delenv("NO_SUCH_TOKEN_VAR", raising=False)
    r = CliRunner().invoke(app, ["gym", "serve", "--host", "0.0.0.0", "--device", "cpu"])
    assert r.exit_code == 2 and "refusing to serve on 0.0.0.0" in r.output and "--allow" in r.output
    r = CliRunner().invoke(app, ["gym", "serve", "--host", "0.0.0.0", "--token-env", "NO_SUCH_TOKEN_VAR"])
    assert r.exit_code == 2 and "NO_SUCH_TOKEN_VAR" in r.output


def test_allowlist_admits_listed_addresses_and_refuses_others_with_403():
    with running_server(make_app(Recorder(), policy=AccessPolicy(parse_allow("127.0.0.1/32")))) as url:
        with client("127.0.0.1") as ok, client("127.0.0.2") as other:
            assert ok.post(f"{url}/evaluate", json=kg_body("a1")).status_code == 200
            r = other.post(f"{url}/evaluate", json=kg_body("a2"))
            assert r.status_code == 403 and r.json()["cause"] == "address"
            assert other.get(f"{url}/metrics").status_code == 403
            assert other.get(f"{url}/health").json() == {"status": "healthy", "ok": True, "authorized": False}
            assert ok.get(f"{url}/metrics").json()["refused"]["address"] == 2


def test_token_missing_or_wrong_gets_401_and_right_token_is_admitted(caplog):
    caplog.set_level(logging.WARNING, logger="drk.gym.transport.server")
    with running_server(make_app(Recorder(), policy=AccessPolicy(token=TOKEN))) as url:
        with client("127.0.0.1") as c:
            assert c.post(f"{url}/evaluate", json=kg_body("t1")).status_code == 401
            wrong = c.post(f"{url}/evaluate", json=kg_body("t2"), headers={"Authorization": "Bearer " + "y" * 32})
            assert wrong.status_code == 401 and wrong.json()["cause"] == "token"
            right = c.post(f"{url}/evaluate", json=kg_body("t3"), headers={"Authorization": f"Bearer {TOKEN}"})
            assert right.status_code == 200
    lines = [r.getMessage() for r in caplog.records if r.name == "drk.gym.transport.server"]
    assert lines == ["refused client=127.0.0.1 cause=token"] * 2  # one line each: address and cause only
    assert TOKEN not in caplog.text and "y" * 32 not in caplog.text and "broken" not in caplog.text


def test_http_gym_sends_the_token_from_drk_gym_token(monkeypatch):
    with running_server(make_app(Recorder(), policy=AccessPolicy(token=TOKEN))) as url:
        monkeypatch.delenv("DRK_GYM_TOKEN", raising=False)
        with pytest.raises(GymUnavailable, match="DRK_GYM_TOKEN"):
            HttpGym(url)
        monkeypatch.setenv("DRK_GYM_TOKEN", TOKEN)
        gym = HttpGym(url)
        try:
            from drk.gym import EvalRequest

            assert gym.evaluate(EvalRequest(TASK, "def broken(:", EvalOptions(**OPTS))).verdict == "compile_error"
        finally:
            gym.close()


def test_oversized_body_gets_413_before_it_is_read_whole():
    big = kg_body("big", kernel="#" * 200_000)
    with running_server(make_app(Recorder(), limits=Limits(max_body_mb=1 / 16))) as url:
        assert httpx.post(f"{url}/evaluate", json=big).status_code == 413

        def chunks():  # no Content-Length: the limit applies as the chunks arrive
            yield b'{"task_id": "big", "kernel_code": "'
            for _ in range(100):
                yield b"#" * 4096

        r = httpx.post(f"{url}/evaluate", content=chunks(), headers={"Content-Type": "application/json"})
        assert r.status_code == 413 and r.json()["cause"] == "body_too_large"
        assert httpx.get(f"{url}/metrics").json()["refused"]["body_too_large"] == 2


def test_huge_trials_and_timeout_against_a_hang_end_within_the_server_maximum(tmp_path):
    pool = LocalPool(device="cpu", workers=1, cache_dir=str(tmp_path), slack_s=30)
    try:
        app = make_app(pool, EvalOptions(**OPTS), Limits(max_timeout_s=4))
        with running_server(app) as url:
            body = kg_body("hang", kernel=HANG, num_perf_trials=10**9, num_correct_trials=10**9, timeout=10**6)
            t0 = time.time()
            first = httpx.post(f"{url}/evaluate", json=body, timeout=60).json()
            end = time.time() + 60
            while httpx.get(f"{url}/status/hang").json()["status"] in ("pending", "processing"):
                assert time.time() < end
                time.sleep(0.2)
            assert time.time() - t0 < 4 + 30
            res = httpx.get(f"{url}/results/hang").json()
            assert first["status"] in ("processing", "timeout") and res["status"] == "timeout"
            limits = res["metadata"]["limits"]
            assert limits["used"]["timeout_s"] == 4 and limits["used"]["timing_trials"] == 1000
            assert limits["used"]["trials"] == 20
            assert limits["clamped"] == {"timeout_s": 10**6, "timing_trials": 10**9, "trials": 10**9}
    finally:
        pool.close()


def test_per_client_inflight_limit_gets_429_and_other_clients_still_get_in():
    backend = Recorder(hold=True)
    with running_server(make_app(backend, EvalOptions(**OPTS), Limits(max_inflight_per_client=1))) as url:
        with client("127.0.0.1") as a, client("127.0.0.2") as b:
            assert a.post(f"{url}/v1/submit", json={"request": req_json(GOOD)}).status_code == 200
            r = a.post(f"{url}/v1/submit", json={"request": req_json(GOOD)})
            assert r.status_code == 429 and r.headers["Retry-After"]
            assert b.post(f"{url}/v1/submit", json={"request": req_json(GOOD)}).status_code == 200
            backend.release()
            assert a.post(f"{url}/v1/submit", json={"request": req_json(GOOD)}).status_code == 200
            assert a.get(f"{url}/metrics").json()["refused"] == {"client_inflight": 1}
        backend.release()


def test_global_queue_limit_gets_503():
    backend = Recorder(hold=True)
    with running_server(make_app(backend, EvalOptions(**OPTS), Limits(max_queue=2))) as url:
        with client("127.0.0.1") as a, client("127.0.0.2") as b:
            assert a.post(f"{url}/v1/submit", json={"request": req_json(GOOD)}).status_code == 200
            assert a.post(f"{url}/v1/submit", json={"request": req_json(GOOD)}).status_code == 200
            r = b.post(f"{url}/v1/submit", json={"request": req_json(GOOD)})
            assert r.status_code == 503 and r.json()["cause"] == "queue_full"
            assert a.get(f"{url}/metrics").json()["refused"] == {"queue_full": 1}
        backend.release()


def test_request_options_cannot_reach_the_sandbox_or_the_device():
    backend = Recorder()
    defaults = EvalOptions(**OPTS)
    with running_server(make_app(backend, defaults)) as url:
        d = req_json(GOOD)
        d["options"].update({"sandbox": False, "sandboxed": False, "device": "cuda:0", "trials": 3})
        r = httpx.post(f"{url}/v1/submit", json={"request": d}).json()
        assert {"sandbox", "sandboxed", "device"} <= set(r["ignored"]) and r["options"]["trials"] == 3
        kg = httpx.post(f"{url}/evaluate", json=kg_body("sb", sandbox=False, device="cuda:0")).json()
        assert {"sandbox", "device"} <= set(kg["metadata"]["limits"]["ignored"])
    for req in backend.requests:  # every option a client may not set arrived as the server's default
        for f in dataclasses.fields(EvalOptions):
            if f.name not in CLIENT_OPTIONS:
                assert getattr(req.options, f.name) == getattr(defaults, f.name), f.name
        assert not hasattr(req.options, "sandboxed")


def test_task_id_in_use_is_never_replaced():
    backend = Recorder()
    with running_server(make_app(backend, EvalOptions(**OPTS))) as url:
        with client("127.0.0.1") as a, client("127.0.0.2") as b:
            first = a.post(f"{url}/evaluate", json=kg_body("mine", kernel="def broken(:\n    pass"))
            again = b.post(f"{url}/evaluate", json=kg_body("mine", kernel="def broken(:\n    pass"))
            other = b.post(f"{url}/evaluate", json=kg_body("mine", kernel="def other(:\n    pass"))
            assert first.status_code == again.status_code == 200 and again.json() == first.json()
            assert other.status_code == 409 and other.json()["cause"] == "task_id_conflict"
            assert len(backend.requests) == 1 and a.get(f"{url}/results/mine").json() == first.json()
            assert a.get(f"{url}/metrics").json()["refused"] == {"task_id_conflict": 1}
