"""`drk gym serve`: the evaluator as an HTTP service (FastAPI + uvicorn; `pip install drk[serve]`).

Endpoints (JSON):
- drk's own: `POST /v1/submit` {request} -> {job_id, options, clamped, ignored}; `GET /v1/status/{job_id}`;
  `GET /v1/result/{job_id}` (202 until done); `POST /v1/batch` {requests: [...]} -> {results: [...]}.
- KernelGYM's (`drk.gym.transport.kernelgym`, `docs/kernelgym-compat.md`): `POST /evaluate` (blocks until the result
  is ready, up to about the request's timeout), `POST /evaluate/batch`, `GET /status/{task_id}`,
  `GET /results/{task_id}`.
- `GET /health` (open: `status: healthy`; details only to admitted clients), `GET /metrics` (counters,
  verdicts, latency percentiles, queue, cache, refusals by cause).

It is: routes, the in-memory job store, and admission (back-pressure, task-id ownership). It isn't: the
evaluator (any backend with `submit(request) -> Future`), access control and the body limit
(`drk.gym.transport.access`), or the option allow-list and maxima (`drk.gym.transport.limits`).

Rules:
- Every job ends: the pool kills and restarts stuck workers (`drk.gym.transport.pool`), so a GET never waits on a
  worker, and a blocking POST waits at most about the request's timeout before answering "processing".
- Back-pressure: more unfinished jobs from one client address than `max_inflight_per_client` get 429, more
  in all than `max_queue` get 503; both mean "retry later" to KernelGYM's client and to `HttpGym`.
- A KernelGYM `task_id` is never replaced: the same request again gets the stored job (and no second run;
  KernelGYM's client resubmits after a read timeout), a different request with that id gets 409. drk's own
  job ids are chosen by the server, so clients cannot collide at all.
- Finished jobs are kept in memory (the most recent `MAX_JOBS`); unfinished ones are never evicted.
"""

import asyncio
import threading
import time
import uuid
from collections import Counter, OrderedDict, defaultdict
from concurrent.futures import Future
from dataclasses import dataclass, field

from drk.gym import types as T
from drk.gym.transport import kernelgym as KG
from drk.gym.transport import limits as L
from drk.gym.transport.access import AccessPolicy, Guard, Refusals, client_of

MAX_JOBS = 100_000
BLOCK_FRACTION = 0.9  # a blocking POST answers before the client's read timeout (KernelGYM: = the request's)


class Refused(Exception):
    """A request the server declines: HTTP status, cause (counted in /metrics), reason (shown)."""

    def __init__(self, status: int, cause: str, reason: str) -> None:
        super().__init__(reason)
        self.status, self.cause, self.reason = status, cause, reason


@dataclass
class Job:
    future: Future
    client: str
    fingerprint: str = ""
    submission: KG.Submission | None = None
    submitted: float = field(default_factory=time.time)


@dataclass
class Entry:
    """One request on its way into the store."""

    job_id: str
    request: T.EvalRequest
    fingerprint: str = ""
    submission: KG.Submission | None = None


class Jobs:
    """The job store: ids -> jobs, unfinished counts per client, and the counters /metrics shows."""

    def __init__(self, backend, limits: L.Limits) -> None:
        self.backend, self.limits = backend, limits
        self.lock = threading.Lock()
        self.jobs: OrderedDict[str, Job] = OrderedDict()
        self.inflight: Counter = Counter()
        self.counters: dict = defaultdict(int)
        self.latencies: list[float] = []

    def _existing(self, entry: Entry) -> Job | None:
        """The stored job for this id if it is the same request; 409 for a different one."""
        job = self.jobs.get(entry.job_id)
        if job is not None and job.fingerprint != entry.fingerprint:
            raise Refused(409, "task_id_conflict", f"task_id {entry.job_id} is in use by a different request")
        return job

    def _admit(self, client: str, n: int) -> None:
        if n and self.inflight[client] + n > self.limits.max_inflight_per_client:
            raise Refused(429, "client_inflight", f"over {self.limits.max_inflight_per_client} unfinished jobs "
                                                  "from this client: retry later")
        if n and sum(self.inflight.values()) + n > self.limits.max_queue:
            raise Refused(503, "queue_full", f"the queue is full ({self.limits.max_queue} jobs): retry later")

    def submit(self, entries: list[Entry], client: str) -> list[Job | Refused]:
        """Store and start the entries as one admission decision (a batch is admitted whole or refused
        whole); per entry the job, or the Refused for an id collision."""
        out: list[Job | Refused] = []
        started = []
        with self.lock:
            fresh = []
            for e in entries:
                try:
                    out.append(self._existing(e))
                except Refused as r:
                    out.append(r)
                if out[-1] is None:
                    fresh.append(len(out) - 1)
            self._admit(client, len(fresh))
            for i in fresh:
                e = entries[i]
                try:
                    fut = self.backend.submit(e.request)
                except RuntimeError as err:  # the pool is closing
                    raise Refused(503, "unavailable", f"the evaluator is not accepting work: {err}") from None
                job = Job(fut, client, e.fingerprint, e.submission)
                self.jobs[e.job_id] = out[i] = job
                self.inflight[client] += 1
                self.counters["submitted"] += 1
                started.append(job)
            self._evict()
        for job in started:  # outside the lock: an already-finished future runs the callback at once
            job.future.add_done_callback(lambda f, job=job: self._done(job, f))
        return out

    def _done(self, job: Job, fut: Future) -> None:
        with self.lock:
            self.inflight[job.client] -= 1
            if self.inflight[job.client] <= 0:
                del self.inflight[job.client]
            self.counters["completed"] += 1
            verdict = fut.result().verdict if not fut.cancelled() and fut.exception() is None else "crashed"
            self.counters[f"verdict_{verdict}"] += 1
            self.latencies.append(time.time() - job.submitted)
            del self.latencies[:-10_000]

    def _evict(self) -> None:
        """Drop the oldest finished jobs beyond MAX_JOBS (an unfinished job is never dropped)."""
        over = len(self.jobs) - MAX_JOBS
        for job_id in [k for k, j in self.jobs.items() if j.future.done()][:max(0, over)]:
            del self.jobs[job_id]

    def get(self, job_id: str) -> Job | None:
        with self.lock:
            return self.jobs.get(job_id)

    def queued(self) -> int:
        with self.lock:
            return sum(self.inflight.values())

    def percentiles(self) -> dict:
        with self.lock:
            lat = sorted(self.latencies)
        if not lat:
            return {}
        pick = lambda q: lat[min(len(lat) - 1, int(q * len(lat)))]  # noqa: E731
        return {"p50_s": pick(0.5), "p90_s": pick(0.9), "p99_s": pick(0.99), "max_s": lat[-1]}


def result_of(fut: Future) -> T.EvalResult:
    """The future's result; a backend exception becomes a SYSTEM-side result rather than a 500."""
    try:
        return fut.result()
    except Exception as e:  # noqa: BLE001 - the evaluator's machinery failed, not the candidate
        return T.EvalResult(task="", verdict=T.INFRA_ERROR, error=f"evaluator error: {type(e).__name__}")


def state_of(fut: Future) -> str:
    return "done" if fut.done() else "processing" if fut.running() else "pending"


async def wait_for(futs: list[Future], seconds: float | None) -> None:
    """Wait until all are done or `seconds` pass (None: until done); never cancels them (asyncio.wait
    does not, and cancelling would cancel the evaluation)."""
    pending = [asyncio.wrap_future(f) for f in futs if not f.done()]
    if pending:
        await asyncio.wait(pending, timeout=None if seconds is None else max(0.1, seconds))


def make_app(backend, defaults: T.EvalOptions | None = None, limits: L.Limits | None = None,
             policy: AccessPolicy | None = None):
    """The FastAPI app over any backend with `submit(request) -> Future`. `policy` defaults to open (for a
    loopback bind); `limits` to `Limits()`."""
    from fastapi import FastAPI, HTTPException, Request
    from fastapi.responses import JSONResponse

    defaults, limits, policy = defaults or T.EvalOptions(), limits or L.Limits(), policy or AccessPolicy()
    jobs, refusals = Jobs(backend, limits), Refusals()
    app = FastAPI(title="drk gym", version="1")
    app.add_middleware(Guard, policy=policy, refusals=refusals, max_body_bytes=limits.max_body_bytes)
    started = time.time()

    @app.exception_handler(Refused)
    async def on_refused(request: Request, exc: Refused):
        refusals.record(client_of(request.scope), exc.cause)
        retry = {"Retry-After": "5"} if exc.status in (429, 503) else None
        return JSONResponse({"detail": exc.reason, "cause": exc.cause}, status_code=exc.status, headers=retry)

    async def body_of(request: Request) -> dict:
        try:
            body = await request.json()
        except Exception:
            raise Refused(400, "invalid_request", "request body is not valid JSON") from None
        if not isinstance(body, dict):
            raise Refused(400, "invalid_request", "request body must be a JSON object")
        return body

    def one(results: list) -> Job:
        if isinstance(results[0], Refused):
            raise results[0]
        return results[0]

    def job_or_404(job_id: str, kernelgym: bool = False) -> Job:
        job = jobs.get(job_id)
        if job is None or (kernelgym and job.submission is None):
            raise HTTPException(404, f"unknown {'task' if kernelgym else 'job'} {job_id}")
        return job

    # ---- drk's own protocol ------------------------------------------------------------------------
    def v1_entry(d) -> tuple[Entry, L.Applied]:
        if not isinstance(d, dict) or not isinstance(d.get("task"), dict) or not isinstance(d.get("source"), str):
            raise Refused(422, "invalid_request", "a request needs `task` (object with id, name, source) and "
                                                  "`source` (string)")
        if max(len(d["source"]), len(str(d["task"].get("source", "")))) > limits.max_source_chars:
            raise Refused(413, "source_too_large", f"a source is over {limits.max_source_chars} characters")
        try:
            req = T.EvalRequest.from_dict({**d, "options": {}})
            applied = L.apply(defaults, d.get("options") if isinstance(d.get("options"), dict) else {}, limits)
        except (TypeError, KeyError, ValueError) as e:
            raise Refused(422, "invalid_request", f"malformed request: {e}") from None
        if not req.task.source.strip():
            raise Refused(422, "invalid_request", "task.source is empty")
        req.options = applied.options
        return Entry(uuid.uuid4().hex, req), applied

    def v1_report(applied: L.Applied) -> dict:
        return {"options": applied.report()["used"], "clamped": applied.clamped, "ignored": applied.ignored}

    @app.post("/v1/submit")
    async def submit_one(request: Request):
        body = await body_of(request)
        entry, applied = v1_entry(body.get("request", body))
        one(jobs.submit([entry], client_of(request.scope)))
        return {"job_id": entry.job_id, **v1_report(applied)}

    @app.get("/v1/status/{job_id}")
    def status(job_id: str):
        state = state_of(job_or_404(job_id).future)
        return {"job_id": job_id, "status": {"done": "completed", "processing": "running"}.get(state, "queued")}

    @app.get("/v1/result/{job_id}")
    def result(job_id: str):
        fut = job_or_404(job_id).future
        if not fut.done():
            return JSONResponse({"job_id": job_id, "status": "running"}, status_code=202)
        return result_of(fut).to_dict()

    @app.post("/v1/batch")
    async def batch(request: Request):
        reqs = (await body_of(request)).get("requests")
        if not isinstance(reqs, list) or not reqs or len(reqs) > limits.max_batch:
            raise Refused(422, "invalid_request", f"`requests` must be a list of 1-{limits.max_batch} requests")
        entries = [v1_entry(r)[0] for r in reqs]
        futs = [j.future for j in jobs.submit(entries, client_of(request.scope))]
        await wait_for(futs, None)  # every job ends: the pool enforces each request's timeout
        return {"results": [result_of(f).to_dict() for f in futs]}

    # ---- KernelGYM's protocol ----------------------------------------------------------------------
    def kg_submission(body: dict) -> KG.Submission:
        try:
            return KG.parse(body, defaults, limits)
        except KG.SourceTooLarge as e:
            raise Refused(413, "source_too_large", str(e)) from None
        except (TypeError, ValueError) as e:
            raise Refused(422, "invalid_request", str(e)) from None

    def kg_answer(task_id: str, job: Job) -> dict:
        state = state_of(job.future)
        if state != "done":
            return KG.unfinished(task_id, state)
        return KG.result_of(result_of(job.future), job.submission)

    def kg_failed(task_id, exc: Refused) -> dict:
        code = {409: "VALIDATION_ERROR", 413: "VALIDATION_ERROR", 422: "VALIDATION_ERROR"}.get(exc.status)
        return {**KG.unfinished(str(task_id), "failed"), "compiled": False, "correctness": False,
                "decoy_kernel": False, "speedup": 0.0, "error_message": exc.reason, "error_code": code}

    @app.post("/evaluate")
    async def kernelgym_evaluate(request: Request):
        sub = kg_submission(await body_of(request))
        job = one(jobs.submit([Entry(sub.task_id, sub.request, sub.fingerprint, sub)], client_of(request.scope)))
        await wait_for([job.future], BLOCK_FRACTION * job.submission.applied.options.timeout_s)
        return kg_answer(sub.task_id, job)

    @app.post("/evaluate/batch")
    async def kernelgym_batch(request: Request):
        body = await body_of(request)
        tasks = body.get("tasks")
        if not isinstance(tasks, list) or not tasks or len(tasks) > limits.max_batch:
            raise Refused(422, "invalid_request", f"`tasks` must be a list of 1-{limits.max_batch} tasks")
        submitted_at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        answers: list = []
        for t in tasks:
            try:
                answers.append(kg_submission(t if isinstance(t, dict) else {}))
            except Refused as r:
                refusals.record(client_of(request.scope), r.cause)
                answers.append(kg_failed(t.get("task_id") if isinstance(t, dict) else None, r))
        subs = [a for a in answers if isinstance(a, KG.Submission)]
        placed = jobs.submit([Entry(s.task_id, s.request, s.fingerprint, s) for s in subs], client_of(request.scope))
        placed_by_sub = {id(s): p for s, p in zip(subs, placed)}
        block = max((s.applied.options.timeout_s for s in subs), default=0.0) * BLOCK_FRACTION
        await wait_for([p.future for p in placed if isinstance(p, Job)], block)
        results = []
        for a in answers:
            p = placed_by_sub.get(id(a))
            if isinstance(p, Refused):
                refusals.record(client_of(request.scope), p.cause)
            results.append(a if isinstance(a, dict) else kg_failed(a.task_id, p) if isinstance(p, Refused)
                           else kg_answer(a.task_id, p))
        failed = sum(r["status"] in ("failed", "timeout", "cancelled") for r in results)
        done = sum(r["status"] == "completed" for r in results)
        return {"batch_id": str(body.get("batch_id") or uuid.uuid4().hex), "total_tasks": len(results),
                "completed_tasks": done, "failed_tasks": failed, "results": results,
                "batch_status": "completed" if done + failed == len(results) else "processing",
                "submitted_at": submitted_at,
                "completed_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}

    @app.get("/status/{task_id}")
    def kernelgym_status(task_id: str):
        job = job_or_404(task_id, kernelgym=True)
        answer = kg_answer(task_id, job)
        return {"task_id": task_id, "status": answer["status"], "error_message": answer["error_message"]}

    @app.get("/results/{task_id}")
    def kernelgym_results(task_id: str):
        answer = kg_answer(task_id, job_or_404(task_id, kernelgym=True))
        return answer if answer["status"] not in ("pending", "processing") else JSONResponse(answer, 202)

    # ---- operations --------------------------------------------------------------------------------
    environment = getattr(backend, "environment", lambda start=False: set())

    @app.get("/health")
    def health(request: Request):
        """Open to every client (KernelGYM's trainer checks `status` before it starts); details only to
        admitted ones, so an unadmitted client learns nothing but that the service is up."""
        if not request.state.drk_authorized:
            return {"status": "healthy", "ok": True, "authorized": False}
        return {"status": "healthy", "ok": True, "authorized": True, "device": getattr(backend, "device", ""),
                "workers": getattr(backend, "workers", None), "queued": jobs.queued(),
                "uptime_s": time.time() - started, "environments": sorted(environment(start=False)),
                "limits": limits.to_dict()}

    @app.get("/metrics")
    def metrics():
        with jobs.lock:
            counters = dict(jobs.counters)
        return {"counters": counters, "latency": jobs.percentiles(), "queued": jobs.queued(),
                "refused": refusals.snapshot(),
                "cache": {"hits": getattr(backend, "hits", 0), "misses": getattr(backend, "misses", 0)}}

    return app


def serve(backend, host: str, port: int, defaults: T.EvalOptions | None = None, limits: L.Limits | None = None,
          policy: AccessPolicy | None = None) -> None:
    """Run until SIGINT/SIGTERM. uvicorn shuts down gracefully and then re-raises the signal; our handler
    turns that into SystemExit so the caller's cleanup (stopping workers, removing temp dirs) runs.
    Forwarded-for headers are not trusted (`proxy_headers=False`): the allowlist sees the TCP peer."""
    import logging
    import signal
    import sys

    import uvicorn

    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("%(asctime)s drk gym: %(message)s"))
    logging.getLogger("drk.gym.transport.server").addHandler(handler)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    getattr(backend, "environment", lambda: None)()  # start a first worker, so /health reports its versions
    uvicorn.run(make_app(backend, defaults, limits, policy), host=host, port=port, log_level="warning",
                proxy_headers=False)
