"""The red-team attack suite (tests/attacks/) on a GPU: every attack whose header says device=gpu or device=any,
evaluated at full task shapes on a CUDA `LocalPool`, with the same side-effect, secret and result-size checks as
tests/test_attacks.py, and `then=` poisoner/follower pairs on one worker. A benchmark script, not a test:

    PYTHONPATH=src python3 bench/attacks_gpu.py --out attacks_gpu.json [--only a0,c0] [--workers 1] [--no-pairs]

Prints `property | attack | verdict | expected | PASS/FAIL/GAP` (GAP: one of tests/test_attacks.py's known gaps)
and writes every result (and why it failed) as JSON.
Uses the helpers of tests/test_attacks.py (importing it needs pytest installed; pytest itself is not run).
"""
from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import secrets
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "tests"))

import test_attacks as ta  # noqa: E402  (header parser and outside-the-candidate observers)
from drk.gym import EvalOptions, EvalRequest, LocalPool  # noqa: E402
from drk.tasks import task_from_file  # noqa: E402

DEVICE = os.environ.get("DRK_BENCH_DEVICE", "cuda")  # "cpu" only to dry-run this script
HOST_AHEAD = False  # --host-ahead: the GPU attacks against the gated timing pass (EvalOptions.host_ahead)


def options(h: dict) -> EvalOptions:
    timeout = h["timeout"] if "timeout" in h["_raw"] else 300.0
    if DEVICE == "cpu":
        return EvalOptions(device="cpu", input_budget_mb=0.25, timeout_s=timeout, input_seed=h["seed"])
    return EvalOptions(device=DEVICE, timeout_s=timeout, host_ahead=HOST_AHEAD, input_seed=h["seed"])


def attack_request(p: Path, label: str | None = None) -> EvalRequest:
    h = ta.HEADERS[p.name]
    return EvalRequest(task_from_file(ROOT / h["task"]), p.read_text(), options(h), solution=label or p.name)


def follower_request(p: Path, label: str) -> EvalRequest:
    h = ta.HEADERS[p.name]
    src = ROOT / h["then"]
    return EvalRequest(task_from_file(ROOT / "data" / "queries" / src.name), src.read_text(),
                       options({"timeout": 300.0, "_raw": {}}), solution=label)


TIMING_TOLERANCE = 1.25  # a timing an attack changed by more than this factor is its doing, not noise


def fresh_pool(workers: int) -> LocalPool:
    """A pool with an empty reference-time cache of its own: each comparison times every reference itself."""
    return LocalPool(device=DEVICE, workers=workers, cache_dir=tempfile.mkdtemp(prefix="drk-attack-cache-"))


def timing_checks(attacks: list[Path], run: dict) -> None:
    """check=reference_time: the follower alone, then the attack, each in a pool with an empty cache; the
    reference time the attack is judged against must be the one measured without it.
    check=neighbour_timing: the follower alone; then, in one two-worker pool (another task, so another
    worker), the attack and, 3 s later while its process lives, the follower: the follower's runtime and
    reference time must be the ones it gets alone."""
    for p in attacks:
        check = ta.HEADERS[p.name].get("check")
        if check not in ("reference_time", "neighbour_timing"):
            continue
        with fresh_pool(1) as pool:
            alone = pool.evaluate(follower_request(p, "follower-alone"))
        if check == "reference_time":
            with fresh_pool(1) as pool:
                attack = pool.evaluate(attack_request(p, "attack-own-cache"))
            run["timing"][p.name] = {"alone": alone, "attack": attack}
            continue
        with fresh_pool(2) as pool:
            fut = pool.submit(attack_request(p, "attack-beside"))
            time.sleep(3.0)
            beside = pool.evaluate(follower_request(p, "follower-beside"))
            attack = fut.result()
        run["timing"][p.name] = {"alone": alone, "beside": beside, "attack": attack}


def timing_problems(p: Path, run: dict) -> list[str]:
    t = run["timing"].get(p.name)
    if not t:
        return []
    alone, why = t["alone"], []
    if alone.verdict != "ok" or not alone.ref_eager_ms or not alone.runtime_ms:
        return [f"follower alone {alone.verdict} without timings"]
    within = lambda a, b: a is not None and b / TIMING_TOLERANCE <= a <= b * TIMING_TOLERANCE  # noqa: E731
    if "beside" not in t:
        if t["attack"].ref_eager_ms is not None and not within(t["attack"].ref_eager_ms, alone.ref_eager_ms):
            why.append(f"judged against a reference of {t['attack'].ref_eager_ms:.4f} ms, "
                       f"{alone.ref_eager_ms:.4f} ms without it")
        return why
    beside = t["beside"]
    if beside.verdict != "ok":
        why.append(f"neighbour {beside.verdict} beside it")
    for field in ("runtime_ms", "ref_eager_ms"):
        if not within(getattr(beside, field), getattr(alone, field)):
            why.append(f"neighbour's {field} {getattr(beside, field)} beside it, {getattr(alone, field):.4f} alone")
    return why


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="where to write the JSON results")
    ap.add_argument("--only", default="", help="comma-separated prefixes of attack file names")
    ap.add_argument("--workers", type=int, default=4, help="pool workers for the main batch (spread over the GPUs)")
    ap.add_argument("--no-pairs", action="store_true", help="skip the then= poisoner/follower runs")
    ap.add_argument("--host-ahead", action="store_true", help="time with EvalOptions(host_ahead=True)")
    args = ap.parse_args()
    global HOST_AHEAD
    HOST_AHEAD = args.host_ahead

    for p in ta.ATTACKS:  # keep the raw header to know whether timeout= was given
        ta.HEADERS[p.name]["_raw"] = dict(kv.split("=", 1) for kv in p.read_text().splitlines()[0].split(":", 1)[1].split())
    prefixes = [s for s in args.only.split(",") if s]
    attacks = [p for p in ta.ATTACKS if ta.HEADERS[p.name]["device"] in ("gpu", "any")
               and (not prefixes or any(p.name.startswith(s) for s in prefixes))]
    secret = "drkSecret-" + secrets.token_hex(16)
    os.environ[ta.SECRET_NAME] = secret
    ta.MARKER_DIR.mkdir(exist_ok=True)
    markers = {p.name: [ta.expand(m) for m in ta.HEADERS[p.name]["markers"]] for p in attacks}
    for ms in markers.values():
        for m in ms:
            m.unlink(missing_ok=True)
    listeners = {p.name: ta.Listener(int(ta.HEADERS[p.name]["listen"])) for p in attacks if "listen" in ta.HEADERS[p.name]}
    run = {"secret": secret, "results": {}, "pairs": {}, "neighbours": {}, "markers": {}, "survivors": {}, "net": {},
           "timing": {}}
    t0 = time.monotonic()
    try:
        partial = Path(args.out + ".partial.jsonl")  # one line per finished evaluation: a run cut short still reports
        partial.write_text("")
        with LocalPool(device=DEVICE, workers=args.workers) as pool:
            futures = [pool.submit(attack_request(p)) for p in attacks]
            for fut in concurrent.futures.as_completed(futures):
                r = fut.result()
                run["results"][r.solution] = r
                with partial.open("a") as f:
                    f.write(json.dumps({"attack": r.solution, "verdict": r.verdict, "flags": r.flags,
                                        "error": r.error[:300], "s": round(time.monotonic() - t0, 1)}) + "\n")
        time.sleep(ta.SURVIVOR_GRACE_S)
        ta.scan_survivors(run)
        if not args.no_pairs:
            with LocalPool(device=DEVICE, workers=1) as pool:  # every pair in turn on one worker
                for p in attacks:
                    if "then" not in ta.HEADERS[p.name]:
                        continue
                    run["pairs"][p.name] = (pool.evaluate(follower_request(p, "follower-alone")),
                                            pool.evaluate(attack_request(p, "poisoner")),
                                            pool.evaluate(follower_request(p, "follower-after")))
                    with partial.open("a") as f:
                        f.write(json.dumps({"pair": p.name, "verdicts": [x.verdict for x in run["pairs"][p.name]],
                                            "s": round(time.monotonic() - t0, 1)}) + "\n")
        timing_checks(attacks, run)
    finally:
        for name, lst in listeners.items():
            lst.close()
            run["net"][name] = list(lst.hits)
        ta.scan_survivors(run)
        for name, ms in markers.items():
            run["markers"][name] = [str(m) for m in ms if m.exists()]
            for m in ms:
                try:
                    m.unlink(missing_ok=True)
                except OSError:
                    pass
        os.environ.pop(ta.SECRET_NAME, None)
    run["sensitive"] = ta.host_sensitive_lines()

    rows, records = [], []
    for p in attacks:
        h = ta.HEADERS[p.name]
        r = run["results"][p.name]
        why = []
        if r.verdict not in h["expect"]:
            why.append(f"verdict {r.verdict} not expected")
        if r.verdict == "ok" and "max_coverage" in h and (r.coverage is None or r.coverage >= float(h["max_coverage"])):
            why.append(f"ok with coverage {r.coverage}")
        if run["markers"].get(p.name):
            why.append(f"wrote {run['markers'][p.name]}")
        if run["survivors"].get(p.name):
            why.append(f"survivors {run['survivors'][p.name]}")
        if run["net"].get(p.name):
            why.append("reached the network")
        if h.get("check") == "secret_numbers" and r.max_abs_diff is not None \
                and abs(r.max_abs_diff - ord(secret[10])) < 0.5:
            why.append("secret leaked through max_abs_diff")
        why += ta.check_result_hygiene(r, run)
        pair = run["pairs"].get(p.name)
        if pair:
            alone, poisoner, after = pair
            if alone.verdict != "ok":
                why.append(f"follower alone {alone.verdict}")
            elif poisoner.verdict == "ok" and not ta.same_result(alone, after):
                why.append(f"follower poisoned ({alone.verdict}/{alone.max_abs_diff} -> {after.verdict}/{after.max_abs_diff})")
            elif h["property"] == "verdict_not_neighbours" and after.verdict != "ok":
                why.append(f"next candidate {after.verdict}")
        why += timing_problems(p, run)
        # a known gap (tests/test_attacks.py KNOWN_GAPS, with its reason) is reported as such, not as a pass
        status = ("GAP" if p.name in ta.KNOWN_GAPS else "FAIL") if why else "PASS"
        if status == "GAP":
            why.append(f"known gap: {ta.KNOWN_GAPS[p.name]}")
        rows.append((h["property"], p.stem, r.verdict, "|".join(h["expect"]), status))
        records.append({"attack": p.name, "property": h["property"], "verdict": r.verdict, "expected": h["expect"],
                        "status": status, "why": why, "coverage": r.coverage, "speedup": r.speedup,
                        "flags": r.flags, "error": r.error[:2000],
                        "pair": [x.to_dict() for x in pair] if pair else None,
                        "timing": {k: x.to_dict() for k, x in run["timing"].get(p.name, {}).items()} or None})
    widths = [max(len(str(row[i])) for row in rows + [("property", "attack", "verdict", "expected", "result")])
              for i in range(5)]
    line = lambda row: " | ".join(str(c).ljust(w) for c, w in zip(row, widths))  # noqa: E731
    print(line(("property", "attack", "verdict", "expected", "result")))
    print("-+-".join("-" * w for w in widths))
    for row in rows:
        print(line(row))
    n_fail = sum(1 for r in rows if r[4] == "FAIL")
    n_gap = sum(1 for r in rows if r[4] == "GAP")
    print(f"\n{len(rows) - n_fail - n_gap}/{len(rows)} attacks defended, {n_gap} known gaps (out of the protocol's "
          f"scope); {time.monotonic() - t0:.0f} s on {DEVICE}")
    Path(args.out).write_text(json.dumps({"device": DEVICE, "attacks": records}, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
