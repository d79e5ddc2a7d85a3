"""`drk gym serve`: the evaluator as an HTTP service (FastAPI + uvicorn; `pip install drk[serve]`).

Endpoints (JSON):
- `POST /v1/submit` {request} → {job_id}; `GET /v1/status/{job_id}`; `GET /v1/result/{job_id}`
- `POST /v1/batch` {requests: [...]} → {results: [...]} (waits; every request carries its own timeout)
- `GET /health`, `GET /metrics` (counters, verdicts, latency percentiles, queue length, cache hits)
- KernelGYM-compatible: `POST /evaluate` (fields `task_id, reference_code, kernel_code, entry_point,
  num_correct_trials, num_perf_trials, timeout, enable_profiling, detect_decoy_kernel, reference_backend`),
  `GET /status/{task_id}`, `GET /results/{task_id}` (`correctness, speedup, compiled, decoy_kernel,
  metadata{num_custom_kernels, num_total_kernels, custom_kernel_cuda_time_in_profiling_us,
  total_kernel_run_time_in_profiling_us}, error_message`), so Dr. Kernel's training scripts can use drk.

Bad requests get 4xx with a reason. The server never waits on a worker without a deadline: the pool
kills and restarts stuck workers (see `drk.gym.pool`), so every job ends as completed (with whatever
verdict) and `GET` answers immediately. Jobs are kept in memory (the most recent 100 000).
"""


import threading
import time
import uuid
from collections import OrderedDict, defaultdict
from concurrent.futures import Future

from drk.gym import types as T
from drk.tasks import Task

MAX_JOBS = 100_000
MAX_SOURCE_CHARS = 1_000_000


class Jobs:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.jobs: OrderedDict[str, dict] = OrderedDict()
        self.counters: dict = defaultdict(int)
        self.latencies: list[float] = []

    def add(self, job_id: str, fut: Future, meta: dict) -> None:
        job = {"future": fut, "submitted": time.time(), **meta}
        with self.lock:
            self.jobs[job_id] = job
            while len(self.jobs) > MAX_JOBS:
                self.jobs.popitem(last=False)
            self.counters["submitted"] += 1

        def done(f: Future) -> None:
            with self.lock:
                self.counters["completed"] += 1
                self.counters[f"verdict_{f.result().verdict}"] += 1
                self.latencies.append(time.time() - job["submitted"])
                del self.latencies[:-10_000]

        fut.add_done_callback(done)

    def get(self, job_id: str) -> dict | None:
        with self.lock:
            return self.jobs.get(job_id)

    def percentiles(self) -> dict:
        with self.lock:
            lat = sorted(self.latencies)
        if not lat:
            return {}
        pick = lambda q: lat[min(len(lat) - 1, int(q * len(lat)))]  # noqa: E731
        return {"p50_s": pick(0.5), "p90_s": pick(0.9), "p99_s": pick(0.99), "max_s": lat[-1]}


def request_from_kernelgym(body: dict, defaults: T.EvalOptions) -> T.EvalRequest:
    """Translate KernelGYM's /evaluate payload into an EvalRequest (ValueError on missing fields)."""
    ref, ker = body.get("reference_code"), body.get("kernel_code")
    if not isinstance(ref, str) or not isinstance(ker, str) or not ref.strip():
        raise ValueError("reference_code and kernel_code (strings) are required")
    entry = body.get("entry_point") or "Model"
    if entry != "Model":  # KernelGYM names the candidate class `<entry_point>New`
        ref = ref.replace(f"class {entry}(", "class Model(")
        ker = ker.replace(f"class {entry}New(", "class ModelNew(")
    opts = T.EvalOptions.from_dict(defaults.to_dict())
    if body.get("num_correct_trials"):
        opts.trials = int(body["num_correct_trials"])
    if body.get("num_perf_trials"):
        opts.timing_trials = int(body["num_perf_trials"])
    if body.get("timeout"):
        opts.timeout_s = float(body["timeout"])
    if body.get("enable_profiling") is False:
        opts.profile = False
    tid = str(body.get("task_id") or uuid.uuid4().hex)
    task = Task(id=f"kernelgym/{body.get('uuid') or 'task'}", name=str(body.get("uuid") or "task"), source=ref,
                origin="kernelgym-api")
    return T.EvalRequest(task=task, source=ker, options=opts, solution=tid, request_id=tid)


def kernelgym_result(res: T.EvalResult, reference_backend: str | None) -> dict:
    compile_ref = (reference_backend or "").lower() in ("torch_compile", "compile", "inductor")
    speedup = res.speedup_compile if compile_ref else res.speedup
    total_us = (res.runtime_ms or 0.0) * 1000.0
    custom_us = total_us * (res.coverage or 0.0)
    return {
        "task_id": res.request_id, "status": "completed", "compiled": res.compiled, "correctness": res.verdict == T.OK,
        "speedup": speedup, "decoy_kernel": res.verdict in (T.NO_TRITON, T.HACKED), "error_message": res.error,
        "reference_runtime": res.ref_compile_ms if compile_ref else res.ref_eager_ms, "kernel_runtime": res.runtime_ms,
        "metadata": {"num_custom_kernels": sum(1 for k in res.kernels if k.get("triton")),
                     "num_total_kernels": len(res.kernels), "custom_kernel_cuda_time_in_profiling_us": custom_us,
                     "total_kernel_run_time_in_profiling_us": total_us, "drk_verdict": res.verdict,
                     "drk_flags": res.flags, "coverage": res.coverage},
    }


def make_app(backend, defaults: T.EvalOptions | None = None):
    """The FastAPI app over any backend with `submit(request) -> Future`."""
    from fastapi import FastAPI, HTTPException, Request
    from fastapi.responses import JSONResponse

    defaults = defaults or T.EvalOptions()
    jobs = Jobs()
    app = FastAPI(title="drk gym", version="1")
    started = time.time()

    async def body_of(request: Request) -> dict:
        try:
            body = await request.json()
        except Exception:
            raise HTTPException(400, "request body is not valid JSON") from None
        if not isinstance(body, dict):
            raise HTTPException(400, "request body must be a JSON object")
        return body

    def parse_request(d: dict) -> T.EvalRequest:
        if not isinstance(d, dict) or not isinstance(d.get("task"), dict) or not isinstance(d.get("source"), str):
            raise HTTPException(422, "a request needs `task` (object with id, name, source) and `source` (string)")
        if len(d["source"]) > MAX_SOURCE_CHARS or len(str(d["task"].get("source", ""))) > MAX_SOURCE_CHARS:
            raise HTTPException(413, "source too large")
        try:
            req = T.EvalRequest.from_dict({**d, "options": {**defaults.to_dict(), **(d.get("options") or {})}})
        except (TypeError, KeyError, ValueError) as e:
            raise HTTPException(422, f"malformed request: {e}") from None
        if not req.task.source.strip():
            raise HTTPException(422, "task.source is empty")
        return req

    def submit(req: T.EvalRequest, meta: dict | None = None) -> str:
        job_id = req.request_id or uuid.uuid4().hex
        req.request_id = job_id
        jobs.add(job_id, backend.submit(req), meta or {})
        return job_id

    def job_or_404(job_id: str, what: str = "job") -> dict:
        job = jobs.get(job_id)
        if job is None:
            raise HTTPException(404, f"unknown {what} {job_id}")
        return job

    environment = getattr(backend, "environment", lambda start=False: set())

    @app.get("/health")
    def health():
        return {"ok": True, "device": getattr(backend, "device", ""), "workers": getattr(backend, "workers", None),
                "queued": getattr(backend, "queued", lambda: 0)(), "uptime_s": time.time() - started,
                "environments": sorted(environment(start=False))}

    @app.get("/metrics")
    def metrics():
        with jobs.lock:
            counters = dict(jobs.counters)
        return {"counters": counters, "latency": jobs.percentiles(),
                "queued": getattr(backend, "queued", lambda: 0)(),
                "cache": {"hits": getattr(backend, "hits", 0), "misses": getattr(backend, "misses", 0)}}

    @app.post("/v1/submit")
    async def submit_one(request: Request):
        body = await body_of(request)
        return {"job_id": submit(parse_request(body.get("request", body)))}

    @app.get("/v1/status/{job_id}")
    def status(job_id: str):
        fut = job_or_404(job_id)["future"]
        return {"job_id": job_id, "status": "completed" if fut.done() else "running" if fut.running() else "queued"}

    @app.get("/v1/result/{job_id}")
    def result(job_id: str):
        fut = job_or_404(job_id)["future"]
        if not fut.done():
            return JSONResponse({"job_id": job_id, "status": "running"}, status_code=202)
        return fut.result().to_dict()

    @app.post("/v1/batch")
    async def batch(request: Request):
        import asyncio

        body = await body_of(request)
        reqs = body.get("requests")
        if not isinstance(reqs, list) or not reqs:
            raise HTTPException(422, "`requests` must be a non-empty list")
        parsed = [parse_request(r) for r in reqs]
        ids = [submit(r) for r in parsed]
        futs = [jobs.get(i)["future"] for i in ids]
        results = await asyncio.gather(*[asyncio.wrap_future(f) for f in futs])
        return {"results": [r.to_dict() for r in results]}

    @app.post("/evaluate")
    async def kernelgym_evaluate(request: Request):
        body = await body_of(request)
        try:
            req = request_from_kernelgym(body, defaults)
        except ValueError as e:
            raise HTTPException(422, str(e)) from None
        return {"task_id": submit(req, {"reference_backend": body.get("reference_backend")}), "status": "submitted"}

    @app.get("/status/{task_id}")
    def kernelgym_status(task_id: str):
        fut = job_or_404(task_id, "task")["future"]
        return {"task_id": task_id, "status": "completed" if fut.done() else "processing" if fut.running() else "pending"}

    @app.get("/results/{task_id}")
    def kernelgym_results(task_id: str):
        job = job_or_404(task_id, "task")
        if not job["future"].done():
            raise HTTPException(409, "task not finished")
        return kernelgym_result(job["future"].result(), job.get("reference_backend"))

    return app


def serve(backend, host: str, port: int, defaults: T.EvalOptions | None = None) -> None:
    """Run until SIGINT/SIGTERM. uvicorn shuts down gracefully and then re-raises the signal; our handler
    turns that into SystemExit so the caller's cleanup (stopping workers, removing temp dirs) runs."""
    import signal
    import sys

    import uvicorn

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    getattr(backend, "environment", lambda: None)()  # start a first worker, so /health reports its versions
    uvicorn.run(make_app(backend, defaults), host=host, port=port, log_level="warning")
