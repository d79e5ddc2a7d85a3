#!/usr/bin/env bash
# One entry point for GPU measurements on the lent H200 (device tool), by question; each part stays well
# under the 10-minute limit of one call:
#   run(command="bash bench/gpu_session.sh smoke",  carry=[".whl", ".dev"], timeout_s=600)
# Parts:
#   smoke    the sandbox on this host (bubblewrap, candidate uid, CUDA in a forked child), GPU tests, a corpus entry
#   first    the probe, the exchange benchmark, two candidates, then (only if both are ok) gym, capped by $BUDGET (570 s)
#   gym      evaluator v2: GPU corpus, GPU attack suite, throughput with the sandbox on and off (4 workers)
#   throughput  evaluations/min by cause: DRK_GPU_LOCK on/off x DRK_PROFILER per-op/ambient (4 workers), 12 workers
#   timing   timing against an independent do_bench referee, short kernels then shipped solutions ($PAIRS: name
#            prefixes; PROFILED=1: the referee also times under the device profiler; HOST_AHEAD=1: both sides
#            enqueue timed calls behind a hold on the GPU, harness.HostAhead); repeatability
#   learn    issue 16 part 3, one seed per call (SEED=0|1): collect (once per machine, shared by the seeds) -> sft
#            ("base", 102M) -> held-out eval -> rl -> held-out eval with recipes/gpu-learn, then
#            bench/learning_gpu_report.py; the run comes back as $OUT/learn-s$SEED.tgz
#   rlvstrl  (PREFETCH=1: drk generates the next step's first turns while this step is judged; TRL_ATTN=eager: TRL's
#            model with eager attention) issue 16 part 4: template trajectories (.dev/learn-collect, made by gpu-prep on the CPU) -> SFT ("base"), then bench/rl_vs_trl.py with evaluation on both
#            sides, overlap_chunks 1 and 2 (CHUNKS="1 2"); steps per hour and the GPU's idle share
#   serve    drk gym serve on the GPU through the KernelGYM trainer sequence; the demo at full shapes
#   probe    which layer of the exec guard keeps CUDA from starting (bench/guard_cuda_probe.py), then $THEN (a part)
#   guard    the exec guard on CUDA (DRK_EXEC_GUARD=on: writable folders noexec, no new executable memory, no
#            writes outside them (Landlock), Triton's launchers built by the judge): its GPU test, two shipped
#            candidates (does CUDA need executable anonymous memory?), the native-code attacks with the early layers off,
#            then the corpus and throughput with the guard on
#   loadtiming  drk's candidate and reference times alone and beside 3 busy workers, DRK_GPU_LOCK on and off
#            (LOCKS="on off"), bench/timing_under_load.py: what the lock buys
#   guardmini two shipped solutions and the native-code attacks a16/k01/k12/k14 under the exec guard on CUDA
#   draws    why a probe does or does not catch $ATTACK (bench/probe_draws.py): its draws, the candidate's misses
#   guarddefault the exec guard as CUDA's default? shipped solutions' throughput under it, the corpus entries in $CORPUS
#   validate issue 14 in one call: the exec guard on CUDA (GPU test, native-code attacks), the attacks changed
#            since the last GPU run ($ATTACKS), throughput with the sandbox on and off side by side
#   recheck  after a CPU-only change: offset probe GPU test, corpus, shipped solutions once, the attacks in $ATTACKS
#   attacks  the attacks named by prefix in $ATTACKS (all when unset) with their pairs, static rules off, capped by $BUDGET
#   verify   the profiled-everywhere GPU tests, the KernelGYM sequence on the GPU (SKIP_TESTS=1, SKIP_KG=1, SKIP_ATTACKS=1 leave them out; TESTS= other test files), the attacks a change is about
#            ($ATTACKS, static rules off unless STATIC=on), then timing against the referee for $PAIRS
#            (short kernels first), capped by $BUDGET
# Needs (make gpu-prep): .whl (wheels the image lacks), .dev/kb/level1|level2 (KernelBench problem files,
# never committed) and .dev/deb (bubblewrap's .deb: the image has no bwrap). Everything lands under $OUT.
set -u
PART=${1:-smoke}
export PYTHONPATH=src PYTHONUNBUFFERED=1 DRK_CACHE_DIR=/tmp/drkcache
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --upgrade --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:src
fi
if ! command -v bwrap >/dev/null && ls .dev/deb/bubblewrap_*.deb >/dev/null 2>&1; then
  dpkg -x .dev/deb/bubblewrap_*.deb /tmp/bw && export DRK_BWRAP=/tmp/bw/usr/bin/bwrap
fi
KB=${KB:-.dev/kb}
nvidia-smi --query-gpu=name,driver_version,memory.used,clocks.sm,clocks.mem --format=csv
date -u; git log -1 --format=%H 2>/dev/null; pwd; id
left() { local l=$(( ${1:-${BUDGET:-570}} - SECONDS )); [ $l -gt 10 ] && echo $l || echo 10; }
probe() {
  echo "== sandbox probe"; python3 -c "from drk.gym.sandbox import isolation; i = isolation.detect(); print(i, i.label)"
  python3 -c "import os, shutil, triton; print('stdlib', os.path.dirname(os.__file__), 'triton', triton.__file__, 'gcc', shutil.which('gcc'), os.path.realpath(shutil.which('gcc') or '-'))"
}
two_candidates() {  # prints the verdicts; fails unless both are ok
  echo "== two candidates"; timeout ${1:-150} python3 -m drk eval --level 1 --problems 19,23 --solutions data/solutions \
    --kernelbench $KB --device cuda --out $OUT/smoke --no-compile-baseline 2>&1 | tail -8
  grep -o '"verdict": "[a-z_]*"\|"error": "[^"]\{0,400\}\|"sandbox": "[a-z]*"\|"runtime_ms": [0-9.]*' $OUT/smoke/results.jsonl
  [ "$(grep -c '"verdict": "ok"' $OUT/smoke/results.jsonl 2>/dev/null)" = 2 ]
}
exchange() {
  echo "== exchange"; timeout 60 python3 bench/exchange_gpu.py --gb 4 --out $OUT/exchange.json 2>&1 | tail -3
  timeout 60 python3 -m pytest -q -m gpu tests/test_exchange.py 2>&1 | tail -2
}
gym() {  # corpus + isolation, then the attack suite, each capped by what is left of the budget
  echo "== corpus + isolation ($SECONDS s in)"; timeout $(left ${1:-400}) python3 bench/gym_gpu.py --kernelbench $KB \
    --out $OUT/gym --parts corpus,isolation 2>&1 | cut -c1-2500
  # static rules off unless STATIC=on: the early layer refuses many attacks by name (`forbidden`, which their
  # headers do not accept), and nothing may rest on it
  echo "== attacks, static rules ${STATIC:-off} ($SECONDS s in)"; DRK_STATIC_RULES=${STATIC:-off} timeout $(left) \
    python3 bench/attacks_gpu.py --out $OUT/attacks_gpu.json 2>&1 | grep -v SyntaxWarning | tail -40
}
medians() {  # one line per throughput cell of an isolation.json: evaluations/min, time beyond GPU work, failures, phases
  python3 -c "import json, sys; d = json.load(open(sys.argv[1]))
for k, v in d.items():
    if isinstance(v, dict) and 'evals_per_min' in v:
        print(k, round(v['evals_per_min'], 1), '/min, beyond', round(v['median_beyond_gpu_work_s'], 2), 's, not ok:',
              {a: b for a, b in v['verdicts'].items() if b != 'ok'})
        print('  medians', {p: round(s, 3) for p, s in v['median_phases_s'].items() if s})" "$1"
}
sweep() {  # evaluator throughput by cause: GPU lock on/off x profiler per-op/ambient, then 12 workers (sandbox on);
  # CELLS="on per-op 4|off per-op 4" picks cells; a fourth field, "release", lets compiles out of the hold (DRK_COMPILE_HOLD)
  local IFS_=$IFS; IFS='|'; local cells=(${CELLS:-on per-op 4|off per-op 4|on ambient 4|off ambient 4|on ambient 12|on per-op 12}); IFS=$IFS_
  for cell in "${cells[@]}"; do
    set -- $cell; local hold=${4:-hold}; local name=sweep-$1-$2-$3${4:+-$4}
    echo "== throughput: lock $1, profiler $2, $3 workers, compile $hold ($SECONDS s in)"
    DRK_GPU_LOCK=$1 DRK_PROFILER=$2 GYM_WORKERS=$3 DRK_COMPILE_HOLD=$hold GYM_SANDBOX=on timeout $(left) python3 bench/gym_gpu.py \
      --kernelbench $KB --out /tmp/$name --parts isolation 2>&1 | grep -o '"evals_per_min": [0-9.]*\|"median_phases_s": {[^}]*}'
    cp /tmp/$name/isolation.json $OUT/$name.json 2>/dev/null  # one file each: a call returns 8
  done
}
case "$PART" in
first)
  probe; exchange
  if ! two_candidates 150; then echo "smoke not ok: stopping"; date -u; exit 3; fi
  echo "== offset probe vs a TF32 GEMM"; DRK_KERNELBENCH=$KB timeout 90 python3 -m pytest -q -m gpu tests/test_offset_probe.py 2>&1 | tail -2
  gym 400
  ;;
smoke)
  probe; two_candidates 200
  [ -n "${GPUTESTS:-}" ] && { echo "== gpu tests"; timeout 300 python3 -m pytest -q -x -m gpu tests 2>&1 | tail -15; }
  ;;
gym)
  gym 330
  ;;
throughput)
  sweep
  ;;
timing)
  timeout 575 python3 bench/timing_referee.py --kernelbench $KB --out $OUT/timing --budget-s 540 \
    --only "${PAIRS:-}" ${PROFILED:+--profiled} ${HOST_AHEAD:+--host-ahead} 2>&1 | tail -70
  ;;
learn)
  # One teacher data set for every seed (the data are the user's, fixed; a seed is the policy's init, SFT order
  # and RL sampling): collected under /tmp/learn-data with the recipe's seed, and a later call on the same warm
  # machine resumes it (nothing left to do) instead of collecting again, leaving RL the time.
  SEED=${SEED:-0}; R=/tmp/learn-s$SEED; C=/tmp/learn-data/collect; D="python3 -m drk"  # $OUT takes 8 files: the run comes back as one archive
  HO="--tasks data/synth/held_out.jsonl --samples 2 --turns 1 --temperature 0.8 --max-tokens 700 --device cuda --workers 12 --no-compile-baseline"
  echo "== collect ($SECONDS s; $(wc -l < $C/trajectories.jsonl 2>/dev/null || echo 0) episodes already)"
  timeout $(left 160) $D collect -c recipes/gpu-learn/collect.yaml --out $C 2>&1 | tail -4
  mkdir -p $R && cp -r $C $R/
  echo "== sft ($SECONDS s)"; timeout $(left 240) $D sft -c recipes/gpu-learn/sft.yaml --data $C/trajectories.jsonl --out $R/sft --set seed=$SEED 2>&1 | tail -4
  echo "== held-out before RL ($SECONDS s)"; timeout $(left 310) $D eval --model $R/sft $HO --out $R/heldout-sft 2>&1 | tail -6
  echo "== rl ($SECONDS s)"; timeout $(left 510) $D rl -c recipes/gpu-learn/rl.yaml --model $R/sft --out $R/rl --set seed=$SEED \
    --set time_limit_s=$(( $(left 510) - 30 )) 2>&1 | tail -6
  echo "== held-out after RL ($SECONDS s)"; timeout $(left) $D eval --model $R/rl/final $HO --out $R/heldout-rl 2>&1 | tail -6
  python3 bench/learning_gpu_report.py $R --out $OUT/learning-gpu-s$SEED
  tar czf $OUT/learn-s$SEED.tgz -C /tmp --exclude="*.safetensors" --exclude="*.bin" --exclude="*.pt" \
    --exclude=checkpoints --exclude=final --exclude="eval_cache.sqlite" --exclude=tensorboard learn-s$SEED
  ;;
rlvstrl)  # issue 16 part 4: a model that writes kernels (template trajectories -> SFT), then drk rl vs TRL with evaluation
  # (EVAL_WORKERS, default 4: the evaluation workers of both sides)
  R=/tmp/rvt; D="python3 -m drk"  # $OUT takes 8 files: only the reports go there
  # The teacher data carried in .dev/learn-collect (`make gpu-prep` collects the recipe's template trajectories on
  # the CPU; SFT reads only their text and verdicts); without it the call collects on the GPU, out of its budget.
  if [ -s .dev/learn-collect/trajectories.jsonl ]; then mkdir -p $R && cp -r .dev/learn-collect $R/collect; else
    echo "== collect ($SECONDS s)"; timeout $(left 170) $D collect -c recipes/gpu-learn/collect.yaml --out $R/collect 2>&1 | tail -3; fi
  echo "== sft ($SECONDS s)"; timeout $(left 260) $D sft -c recipes/gpu-learn/sft.yaml --data $R/collect/trajectories.jsonl --out $R/sft 2>&1 | tail -3
  for CH in ${CHUNKS:-1 2}; do  # each run gets an equal share of what is left
    echo "== rl vs trl, overlap_chunks=$CH ($SECONDS s)"; timeout $(( $(left) / $(echo ${CHUNKS:-1 2} | wc -w) )) python3 bench/rl_vs_trl.py --model $R/sft \
      --queries data/synth/held_in.jsonl --problems 1-16 --prompts 4 --rollouts 8 --max-new-tokens 1024 --temperature 0.8 --steps ${STEPS:-4} \
      --eval-workers ${EVAL_WORKERS:-4} --overlap-chunks $CH ${PREFETCH:+--prefetch} ${TRL_ATTN:+--trl-attn $TRL_ATTN} --sides ${SIDES:-$([ $CH = 1 ] && echo drk,trl || echo drk)} --out $R-c$CH 2>&1 | cut -c1-900
    mkdir -p $OUT/rvt-c$CH; cp $R-c$CH/rl_vs_trl.json $OUT/rvt-c$CH/; cp $R-c$CH/drk/metrics.jsonl $OUT/rvt-c$CH/drk_metrics.jsonl
  done
  ;;
probe)
  echo "== guard layers vs CUDA"; timeout 120 python3 bench/guard_cuda_probe.py 2>&1 | tail -24
  if command -v strace >/dev/null; then  # the calls that fail under Landlock alone, when the image has strace
    echo "== strace, landlock /tmp /dev"; timeout 60 strace -f -qq -e trace=%file,%desc -Z -o /tmp/ll.trace \
      python3 bench/guard_cuda_probe.py "landlock /tmp /dev" >/dev/null 2>&1; grep -v ENOENT /tmp/ll.trace | tail -25
  else echo "no strace here"; fi
  [ -n "${THEN:-}" ] && exec bash "$0" "$THEN"
  ;;
guard)
  probe
  echo "== exec guard: GPU test"; DRK_EXEC_GUARD=on timeout 150 python3 -m pytest -q -m gpu tests/test_launchers.py 2>&1 | tail -3
  DRK_EXEC_GUARD=on two_candidates 150 || echo "== guard: a shipped candidate was not ok"
  echo "== native-code attacks, audit hook and static rules off ($SECONDS s in)"; DRK_EXEC_GUARD=on DRK_AUDIT=off \
    DRK_STATIC_RULES=off timeout 180 python3 bench/attacks_gpu.py --only ${ATTACKS:-a11,a12,a13,a14,a15,a16,a17,a20,g01,g10,k01,k02,k03,k10,k12,k13,k14,k15,k16,k17,k18,l01} --no-pairs \
    --workers 4 --out $OUT/attacks_guard.json 2>&1 | grep -v SyntaxWarning | tail -12
  echo "== corpus + throughput, guard on ($SECONDS s in)"; DRK_EXEC_GUARD=on timeout $(left) python3 bench/gym_gpu.py \
    --kernelbench $KB --out $OUT/gym-guard --parts corpus,isolation 2>&1 | cut -c1-2500
  ;;
guardmini)  # the least that shows the exec guard on CUDA: two shipped solutions `ok` under it, then the native-code
  # attacks that ran without it (a16, k01, k12, k14) with the early layers off, each capped by $BUDGET
  DRK_EXEC_GUARD=on two_candidates $(( $(left) / 2 )) || echo "== guard: a shipped candidate was not ok"
  echo "== native-code attacks under the guard, early layers off ($SECONDS s in)"; DRK_EXEC_GUARD=on DRK_AUDIT=off \
    DRK_STATIC_RULES=off timeout $(left) python3 bench/attacks_gpu.py --only ${GUARD_ATTACKS:-a16,k01,k12,k14} --no-pairs \
    --workers 4 --out $OUT/attacks_guard.json 2>&1 | grep -v SyntaxWarning | tail -${ATTACK_LINES:-10}
  ;;
draws)  # why a probe does or does not catch $ATTACK: evaluations under seeds $EVAL_SEEDS, then the probe's draws for
  # $SEEDS rebuilt with what the candidate does on them, and $GRID (bench/probe_draws.py), capped by $BUDGET
  A=${ATTACK:-tests/attacks/m10b_naive_variance_relative_switch.py}
  echo "== evaluated ($SECONDS s in)"; timeout $(( $(left) / 2 )) python3 bench/probe_draws.py $A --probe ${PROBE:-near_all} \
    --seeds ${EVAL_SEEDS:-0-7} --out $OUT/draws-eval.jsonl 2>&1 | grep -v Warn | cut -c1-420
  echo "== draws ($SECONDS s in)"; timeout $(left) python3 bench/probe_draws.py $A --probe ${PROBE:-near_all} --seeds ${SEEDS:-8-47} \
    --no-evaluate ${GRID:+--grid $GRID} --out $OUT/draws.jsonl 2>&1 | grep -v Warn | cut -c1-300
  ;;
guarddefault)  # can CUDA slots take the exec guard by default? every shipped level 1-2 solution `ok` under it, with
  # its throughput (sandbox on, lock on, 2 passes), beside the corpus entries named in $CORPUS (device=any ones too)
  [ -n "${CORPUS:-}" ] && { echo "== corpus $CORPUS, guard on ($SECONDS s in)"; DRK_EXEC_GUARD=on DRK_CORPUS_ONLY=$CORPUS \
    timeout $(( $(left) / 3 )) python3 bench/gym_gpu.py --kernelbench $KB --out $OUT/corpus --parts corpus 2>&1 | tail -2 | cut -c1-3000; }
  echo "== throughput, guard on ($SECONDS s in)"; DRK_EXEC_GUARD=on GYM_SANDBOX=on GYM_PASSES=${GYM_PASSES:-2} timeout $(left) \
    python3 bench/gym_gpu.py --kernelbench $KB --out $OUT/gym --parts isolation > $OUT/gym.log 2>&1
  medians $OUT/gym/isolation.json || tail -5 $OUT/gym.log
  ;;
validate)  # issue 14 in one call, each step capped: the exec guard on CUDA (its GPU test, then the native-code
  # attacks with the early layers off), the attacks changed since the last GPU run (static rules off), then
  # throughput over the shipped level 1-2 solutions with the sandbox on and off side by side (lock on, 2 passes)
  echo "== exec guard: GPU test"; DRK_EXEC_GUARD=on timeout 90 python3 -m pytest -q -m gpu tests/test_launchers.py 2>&1 | tail -${TEST_LINES:-3}
  echo "== native-code attacks under the guard, early layers off ($SECONDS s in)"; DRK_EXEC_GUARD=on DRK_AUDIT=off \
    DRK_STATIC_RULES=off timeout 120 python3 bench/attacks_gpu.py --only ${GUARD_ATTACKS:-a16,a17,a20,k01,k02,k10,k12,k13,k14,k15,k16,k17,k18,l01} \
    --no-pairs --workers 4 --out $OUT/attacks_guard.json 2>&1 | grep -v SyntaxWarning | tail -${ATTACK_LINES:-18}
  echo "== attacks ${ATTACKS:-q02,s0,m09,m11,m10} ($SECONDS s in)"; DRK_STATIC_RULES=off timeout $(( $(left ${BUDGET:-570}) / 3 )) \
    python3 bench/attacks_gpu.py --only ${ATTACKS:-q02,s0,m09,m11,m10} --workers 2 --out $OUT/attacks.json 2>&1 \
    | grep -v SyntaxWarning | tail -${ATTACK_LINES:-18}
  echo "== throughput, sandbox on and off ($SECONDS s in)"; GYM_PASSES=${GYM_PASSES:-2} timeout $(left) python3 bench/gym_gpu.py \
    --kernelbench $KB --out $OUT/gym --parts isolation > $OUT/gym.log 2>&1
  medians $OUT/gym/isolation.json || tail -5 $OUT/gym.log
  ;;
loadtiming)  # does a busy GPU change drk's numbers, lock on and off? (bench/timing_under_load.py)
  SHARE=$(( $(left) / $(echo ${LOCKS:-on off} | wc -w) ))  # each setting an equal share of the call
  for LOCK in ${LOCKS:-on off}; do
    echo "== timing under load, lock $LOCK ($SECONDS s in)"; DRK_GPU_LOCK=$LOCK timeout $SHARE \
      python3 bench/timing_under_load.py --kernelbench $KB --out $OUT/load-$LOCK --neighbours ${NEIGHBOURS:-3} \
      --budget-s $(( SHARE - 60 )) ${PAIRS:+--only $PAIRS} 2>&1 | tail -14
  done
  ;;
recheck)  # after a CPU-only change to the probes or the sandbox, one call: the offset probe's GPU test (a TF32 GEMM
  # stays ok), the GPU corpus, every shipped level 1-2 solution once (sandbox on, 4 workers: each must stay ok),
  # then the attacks named in $ATTACKS with their pairs (static rules off) in what is left of $BUDGET
  echo "== offset probe vs a TF32 GEMM"; DRK_KERNELBENCH=$KB timeout 90 python3 -m pytest -q -m gpu tests/test_offset_probe.py 2>&1 | tail -2
  echo "== corpus ($SECONDS s in)"; timeout 90 python3 bench/gym_gpu.py --kernelbench $KB --out $OUT/gym --parts corpus 2>&1 \
    | grep -o '"file": "[^"]*", "verdict": "[a-z_]*"\|"pass": [a-z]*\|"passed": [0-9]*, "total": [0-9]*' | paste -sd' ' | cut -c1-1800
  echo "== shipped solutions, sandbox on ($SECONDS s in)"; GYM_SANDBOX=on GYM_PASSES=1 timeout 150 python3 bench/gym_gpu.py \
    --kernelbench $KB --out $OUT/gym --parts isolation > $OUT/gym.log 2>&1
  medians $OUT/gym/isolation.json || tail -5 $OUT/gym.log
  echo "== attacks ${ATTACKS:-none}, static rules off ($SECONDS s in)"; [ -n "${ATTACKS:-}" ] && DRK_STATIC_RULES=off \
    timeout $(left) python3 bench/attacks_gpu.py --only $ATTACKS --workers ${WORKERS:-4} --out $OUT/attacks.json 2>&1 \
    | grep -v SyntaxWarning | tail -${ATTACK_LINES:-50}
  ;;
attacks)  # the attacks whose names start with one of $ATTACKS (comma-separated; all when unset) at full shapes, with
  # their poisoner/follower pairs on one worker, static rules off unless STATIC=on, capped by $BUDGET
  echo "== attacks ${ATTACKS:-all}, static rules ${STATIC:-off}, ${WORKERS:-4} workers"; DRK_STATIC_RULES=${STATIC:-off} \
    timeout $(left) python3 bench/attacks_gpu.py ${ATTACKS:+--only $ATTACKS} --workers ${WORKERS:-4} \
    --out $OUT/attacks.json 2>&1 | grep -v SyntaxWarning | tail -${ATTACK_LINES:-80}
  ;;
verify)
  [ -z "${SKIP_TESTS:-}" ] && { echo "== gpu tests"; timeout 150 python3 -m pytest -q -m gpu ${TESTS:-tests/test_profiled_everywhere.py \
    tests/test_decode_gpu.py tests/test_host_ahead.py} 2>&1 | tail -${TEST_LINES:-3}; }
  [ -z "${SKIP_KG:-}" ] && { echo "== kernelgym sequence on the GPU ($SECONDS s in)"; DRK_TEST_DEVICE=cuda timeout 100 \
    python3 -m pytest -q -x tests/test_server_kernelgym.py 2>&1 | tail -3; }
  # The attacks a change is about run with the static rules off unless STATIC=on: the early layer refuses many
  # of them by name (`forbidden`, which their headers do not accept), and nothing may rest on it.
  A=${ATTACKS:-g01,g10,g11}
  [ -z "${SKIP_ATTACKS:-}" ] && { echo "== attacks $A, static rules ${STATIC:-off} ($SECONDS s in)"; DRK_STATIC_RULES=${STATIC:-off} \
    timeout 90 python3 bench/attacks_gpu.py --only $A --no-pairs --workers 4 ${HOST_AHEAD:+--host-ahead} \
    --out $OUT/attacks_verify.json 2>&1 | grep -v SyntaxWarning | tail -12; }
  echo "== timing ($SECONDS s in)"; timeout $(left) python3 bench/timing_referee.py --kernelbench $KB --out $OUT/timing \
    --only "${PAIRS:-short/}" --repeat ${REPEAT:-0} --budget-s $(( $(left) - 15 )) ${PROFILED:+--profiled} \
    ${HOST_AHEAD:+--host-ahead} 2>&1 | tail -30
  ;;
serve)
  echo "== kernelgym sequence"; DRK_TEST_DEVICE=cuda timeout 250 python3 -m pytest -q -x tests/test_server_kernelgym.py 2>&1 | tail -8
  echo "== demo"; timeout 250 python3 -m drk eval --level 1,2 --solutions data/solutions --kernelbench $KB \
    --device cuda --out $OUT/demo --no-compile-baseline 2>&1 | tail -14
  ;;
esac
date -u
