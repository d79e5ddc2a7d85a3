#!/usr/bin/env bash
# Every GPU measurement the open issues ask for, in three calls on the lent H200 (device tool), each well
# under the 10-minute limit; make them back to back so the machine stays warm:
#   run(command="bash bench/gpu_session.sh gym",   carry=[".whl", ".dev"], timeout_s=600)
#   run(command="bash bench/gpu_session.sh gym2",  carry=[".whl", ".dev"], timeout_s=600)
#   run(command="bash bench/gpu_session.sh train", carry=[".whl", ".dev"], timeout_s=600)
# Parts `final` and `rl` are the later re-measurements of 2026-12-02; `next` is what is still to measure.
# Needs (make gpu-prep): .whl (../shared/device/wheels.sh) and .dev/kb/level1, .dev/kb/level2 (KernelBench problem files,
# copied into that git-ignored folder for the call; never committed). Everything lands under $OUT.
set -u
PART=${1:-gym}
export PYTHONPATH=src PYTHONUNBUFFERED=1 DRK_CACHE_DIR=/tmp/drkcache
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --upgrade --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:src
fi
KB=${KB:-.dev/kb}
nvidia-smi --query-gpu=name,driver_version,memory.used,clocks.sm,clocks.mem --format=csv
date -u
case "$PART" in
gym)   # issue 2 + 3: shipped solutions at full shapes, timing fidelity, GPU corpus, compile baseline
  echo "== demo"; timeout 150 python3 -m drk eval --level 1,2 --solutions data/solutions --kernelbench $KB \
    --device cuda --out $OUT/demo --no-compile-baseline 2>&1 | tail -12
  echo "== fidelity + corpus"; timeout 200 python3 bench/gym_gpu.py --kernelbench $KB --out $OUT/bench \
    --parts fidelity,corpus 2>&1 | cut -c1-1500
  echo "== compile baseline"; timeout 150 python3 -m drk eval --level 2 --problems 12,76 --solutions data/solutions \
    --kernelbench $KB --device cuda --out $OUT/compile 2>&1 | tail -8
  ;;
gym2)  # issue 2 + 6: warm vs fresh process, throughput with 1 and 4 workers per GPU and its timing noise; corpus again
  echo "== overhead + throughput"; timeout 500 python3 bench/gym_gpu.py --kernelbench $KB --out $OUT/bench \
    --parts overhead,throughput,corpus 2>&1 | cut -c1-2500
  ;;
train) # issue 4 + 5: a random Qwen3-0.6B-shaped model through the local engine at real shapes; RL vs TRL
  echo "== model eval"; python3 -c "from drk.engines.tiny import build_tiny_model; import torch; \
build_tiny_model('/tmp/q06', size='qwen3-0.6b', dtype=torch.bfloat16)" 2>&1 | tail -2
  timeout 200 python3 -m drk eval --level 1 --problems 1-10 --kernelbench $KB --model /tmp/q06 --samples 2 --turns 2 \
    --max-tokens 256 --device cuda --no-compile-baseline --out $OUT/model_eval 2>&1 | tail -14
  echo "== rl vs trl"; timeout 330 python3 bench/rl_vs_trl.py --model qwen3-0.6b --queries $KB/level1 --problems 1-16 \
    --prompts 4 --rollouts 8 --max-new-tokens 256 --steps 3 --eval-device cuda --out $OUT/rl 2>&1 | cut -c1-1500
  rm -rf $OUT/rl/drk/checkpoints $OUT/rl/drk/final $OUT/rl/drk/tensorboard $OUT/rl/trl $OUT/model_eval/episodes.jsonl
  ;;
final) # the re-measurements after the fixes of 2026-12-02: evaluator overhead at small shapes, the side-stream
       # hack at scale 3, generation alone, and RL vs TRL with token-budgeted micro-batches
  echo "== overhead_small"; timeout 170 python3 bench/gym_gpu.py --kernelbench $KB --out $OUT/bench \
    --parts overhead_small 2>&1 | cut -c1-1200
  echo "== side stream"; DRK_CORPUS_ONLY=hack_side_stream timeout 60 python3 bench/gym_gpu.py --kernelbench $KB \
    --out $OUT/bench --parts corpus 2>&1 | cut -c1-600
  echo "== gen, rl vs trl"; timeout 290 python3 bench/rl_vs_trl.py --model qwen3-0.6b --queries $KB/level1 --problems 1-16 \
    --prompts 4 --rollouts 8 --max-new-tokens 256 --steps 3 --eval-device cuda --sides gen,drk,trl --out $OUT/rl 2>&1 \
    | grep -v "^WARNING\|Target directory" | cut -c1-900
  rm -rf $OUT/rl/drk/checkpoints $OUT/rl/drk/final $OUT/rl/drk/tensorboard $OUT/rl/trl
  ;;
rl)    # RL vs TRL alone, 4 steps (3 after warm-up)
  timeout 230 python3 bench/rl_vs_trl.py --model qwen3-0.6b --queries $KB/level1 --problems 1-16 --prompts 4 \
    --rollouts 8 --max-new-tokens 256 --steps 4 --eval-device cuda --sides drk,trl --out $OUT/rl 2>&1 \
    | grep -v "^WARNING\|Target directory\|^{'loss'" | cut -c1-600
  rm -rf $OUT/rl/drk/checkpoints $OUT/rl/drk/final $OUT/rl/drk/tensorboard $OUT/rl/trl
  ;;
next)  # what the second session of 2026-12-02 left (docs/measurements/2026-12-02-h200-b.md, "Still to measure"):
       # judge peak memory at full shapes, drk eval --model timings, throughput vs fresh runner on the same
       # candidates, RL vs TRL with deterministic_generation off. About 6 minutes.
  echo "== memory"; timeout 110 python3 -m drk eval --level 1 --problems 19,23,36,47,100 --solutions data/solutions \
    --kernelbench $KB --device cuda --out $OUT/memory --no-compile-baseline 2>&1 | tail -3
  python3 -c "import json,sys; [print(r['task'], r['verdict'], r.get('peak_memory_mb'), r.get('evaluator_peak_memory_mb'), \
r['shapes'].get('input_mb'), r['shapes'].get('output_mb')) for r in map(json.loads, open(sys.argv[1]))]" $OUT/memory/results.jsonl
  echo "== model eval"; python3 -c "from drk.engines.tiny import build_tiny_model; import torch; \
build_tiny_model('/tmp/q06', size='qwen3-0.6b', dtype=torch.bfloat16)" >/dev/null 2>&1
  timeout 100 python3 -m drk eval --level 1 --problems 1-10 --kernelbench $KB --model /tmp/q06 --samples 2 --turns 2 \
    --max-tokens 256 --device cuda --no-compile-baseline --out $OUT/model_eval 2>&1 | tail -2
  head -4 $OUT/model_eval/report.md; rm -f $OUT/model_eval/episodes.jsonl $OUT/model_eval/*.png
  echo "== throughput"; timeout 200 python3 bench/gym_gpu.py --kernelbench $KB --out $OUT/bench --parts throughput 2>&1 \
    | cut -c1-800
  echo "== rl"; timeout 200 python3 bench/rl_vs_trl.py --model qwen3-0.6b --queries $KB/level1 --problems 1-16 \
    --prompts 4 --rollouts 8 --max-new-tokens 256 --steps 4 --eval-device cuda --sides drk,trl --out $OUT/rl 2>&1 \
    | grep -v "^WARNING\|Target directory\|^{'loss'" | cut -c1-600
  rm -rf $OUT/rl/drk/checkpoints $OUT/rl/drk/final $OUT/rl/drk/tensorboard $OUT/rl/trl
  ;;
last)  # third session of 2026-12-02: the judge's peak memory after it stopped keeping private input copies, and
       # where RL generation time goes (prefill vs decode ms/step in drk rl, drk's engine alone, HF generate), vs TRL
  echo "== memory"; timeout 110 python3 -m drk eval --level 1 --problems 19,23,36,47,100 --solutions data/solutions \
    --kernelbench $KB --device cuda --out $OUT/memory --no-compile-baseline 2>&1 | tail -3
  python3 -c "import json,sys; [print(r['task'], r['verdict'], r.get('peak_memory_mb'), r.get('evaluator_peak_memory_mb'), \
r['shapes'].get('input_mb'), r['shapes'].get('output_mb'), r.get('runtime_ms'), r.get('speedup')) for r in map(json.loads, open(sys.argv[1]))]" $OUT/memory/results.jsonl
  echo "== rl"; timeout 330 python3 bench/rl_vs_trl.py --model qwen3-0.6b --queries $KB/level1 --problems 1-16 \
    --prompts 4 --rollouts 8 --max-new-tokens 256 --steps 4 --eval-device cuda --sides gen,drk,trl --out $OUT/rl 2>&1 \
    | grep -v "^WARNING\|Target directory\|^{'loss'\|Writing model\|shared tensor" | cut -c1-700
  python3 -c "import json,sys; [print(m['step'], json.dumps(m['seconds']), json.dumps(m.get('generation'))) for m in map(json.loads, open(sys.argv[1]))]" $OUT/rl/drk/metrics.jsonl
  rm -rf $OUT/rl/drk/checkpoints $OUT/rl/drk/final $OUT/rl/drk/tensorboard $OUT/rl/trl $OUT/rl/drk/rl_config.json
  ;;
verify)  # after the judge stopped copying inputs (reference on the inputs themselves, timing set = last trial):
         # peak memory again, every shipped solution at full shapes, timing fidelity and the GPU corpus
  echo "== memory"; timeout 110 python3 -m drk eval --level 1 --problems 19,23,36,47,100 --solutions data/solutions \
    --kernelbench $KB --device cuda --out $OUT/memory --no-compile-baseline 2>&1 | tail -1
  python3 -c "import json,sys; [print(r['task'], r['verdict'], r.get('peak_memory_mb'), r.get('evaluator_peak_memory_mb'), \
r['shapes'].get('input_mb'), r['shapes'].get('output_mb'), r.get('runtime_ms'), r.get('speedup'), r['phase_seconds'].get('total')) for r in map(json.loads, open(sys.argv[1]))]" $OUT/memory/results.jsonl
  echo "== demo"; timeout 170 python3 -m drk eval --level 1,2 --solutions data/solutions --kernelbench $KB \
    --device cuda --out $OUT/demo --no-compile-baseline 2>&1 | tail -12
  echo "== fidelity + corpus"; timeout 220 python3 bench/gym_gpu.py --kernelbench $KB --out $OUT/bench \
    --parts fidelity,corpus 2>&1 | cut -c1-2500
  ;;
next2)  # what the third session of 2026-12-02 left (docs/measurements/2026-12-02-h200-c.md, "Still to measure"):
        # judge peaks with torch.cuda.ipc_collect (a small task right after a 12 GiB one), the fidelity offset split
        # into protocol and runner shares plus the empty-launch floor, and the CUDA-graph headroom for decoding
  echo "== memory"; timeout 120 python3 -m drk eval --level 1 --problems 1,19,47,88,100 --solutions data/solutions \
    --kernelbench $KB --device cuda --workers 1 --out $OUT/memory --no-compile-baseline 2>&1 | tail -1
  python3 -c "import json,sys; [print(r['task'], r['verdict'], r.get('peak_memory_mb'), r.get('evaluator_peak_memory_mb'), \
r['shapes'].get('input_mb'), r['shapes'].get('output_mb'), r['phase_seconds'].get('correctness'), r['phase_seconds'].get('total')) \
for r in map(json.loads, open(sys.argv[1]))]" $OUT/memory/results.jsonl
  echo "== fidelity"; timeout 200 python3 bench/gym_gpu.py --kernelbench $KB --out $OUT/bench --parts fidelity 2>&1 | cut -c1-2500
  echo "== gen"; timeout 250 python3 bench/rl_vs_trl.py --model qwen3-0.6b --queries $KB/level1 --problems 1-16 \
    --prompts 4 --rollouts 8 --max-new-tokens 256 --sides gen --out $OUT/rl 2>&1 | grep -v "^WARNING" | cut -c1-1500
  ;;
graph)  # fourth session of 2026-12-02: drk's CUDA-graph decoder (issue 5) - GPU engine test, generation alone, and
        # 4 drk rl steps beside 4 TRL GRPOTrainer steps on the same model, batch and lengths
  echo "== gpu engine test"; timeout 150 python3 -m pytest -q -s -m gpu -p no:cacheprovider tests/test_engines.py 2>&1 \
    | grep -v "^WARNING" | tail -15
  echo "== rl"; timeout 400 python3 bench/rl_vs_trl.py --model qwen3-0.6b --queries $KB/level1 --problems 1-16 \
    --prompts 4 --rollouts 8 --max-new-tokens 256 --steps 4 --eval-device cuda --sides gen,drk,trl --out $OUT/rl 2>&1 \
    | grep -v "^WARNING\|Target directory\|^{'loss'\|Writing model\|shared tensor" | cut -c1-900
  python3 -c "import json,sys; [print(m['step'], json.dumps(m['seconds']), json.dumps(m.get('generation'))) for m in map(json.loads, open(sys.argv[1]))]" $OUT/rl/drk/metrics.jsonl
  rm -rf $OUT/rl/drk/checkpoints $OUT/rl/drk/final $OUT/rl/drk/tensorboard $OUT/rl/trl $OUT/rl/drk/rl_config.json
  ;;
final2)  # fourth session of 2026-12-02, after the graph decoder: fidelity again (issue 2), drk eval through the local
         # engine (issue 4's model path) and 2 multi-turn drk rl steps (3 turns: a graph per turn's prompt width)
  echo "== fidelity"; timeout 200 python3 bench/gym_gpu.py --kernelbench $KB --out $OUT/bench --parts fidelity 2>&1 | cut -c1-2500
  echo "== model eval"; python3 -c "from drk.engines.tiny import build_tiny_model; import torch; \
build_tiny_model('/tmp/q06', size='qwen3-0.6b', dtype=torch.bfloat16)" 2>&1 | tail -2
  timeout 150 python3 -m drk eval --level 1 --problems 1-10 --kernelbench $KB --model /tmp/q06 --samples 2 --turns 2 \
    --max-tokens 256 --device cuda --no-compile-baseline --out $OUT/model_eval 2>&1 | tail -14
  echo "== rl 3 turns"; timeout 200 python3 bench/rl_vs_trl.py --model qwen3-0.6b --queries $KB/level1 --problems 1-16 \
    --prompts 4 --rollouts 8 --max-new-tokens 256 --steps 2 --turns 3 --eval-device cuda --sides drk --out $OUT/rl 2>&1 \
    | grep -v "^WARNING" | cut -c1-600
  python3 -c "import json,sys; [print(m['step'], m['turns'], json.dumps(m['seconds']), json.dumps(m.get('generation'))) for m in map(json.loads, open(sys.argv[1]))]" $OUT/rl/drk/metrics.jsonl
  rm -rf $OUT/rl/drk/checkpoints $OUT/rl/drk/final $OUT/rl/drk/tensorboard $OUT/rl/drk/rl_config.json $OUT/model_eval/episodes.jsonl
  ;;
mt)  # fourth session of 2026-12-02, after training moved to right padding without a mask (final2's 3-turn run had a
     # NaN gradient in step 1 and NaN logits in step 2): 2 multi-turn drk rl steps, then drk vs TRL again (4 steps)
  echo "== rl 3 turns"; timeout 150 python3 bench/rl_vs_trl.py --model qwen3-0.6b --queries $KB/level1 --problems 1-16 \
    --prompts 4 --rollouts 8 --max-new-tokens 256 --steps 2 --turns 3 --eval-device cuda --sides drk --out $OUT/rl3 2>&1 \
    | grep -v "^WARNING" | cut -c1-300
  python3 -c "import json,sys; [print(m['step'], m['turns'], m['grad_norm'], m['skipped_updates'], m['mrs_kept'], json.dumps(m['seconds']), \
json.dumps(m.get('generation'))) for m in map(json.loads, open(sys.argv[1]))]" $OUT/rl3/drk/metrics.jsonl
  echo "== rl vs trl"; timeout 220 python3 bench/rl_vs_trl.py --model qwen3-0.6b --queries $KB/level1 --problems 1-16 \
    --prompts 4 --rollouts 8 --max-new-tokens 256 --steps 4 --eval-device cuda --sides drk,trl --out $OUT/rl 2>&1 \
    | grep -v "^WARNING\|Target directory\|^{'loss'\|Writing model\|shared tensor" | cut -c1-300
  python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print('drk', r['drk'].get('step_s'), 'trl', r['trl'].get('step_s'))" $OUT/rl/rl_vs_trl.json
  python3 -c "import json,sys; [print(m['step'], m['grad_norm'], json.dumps(m['seconds'])) for m in map(json.loads, open(sys.argv[1]))]" $OUT/rl/drk/metrics.jsonl
  rm -rf $OUT/rl*/drk/checkpoints $OUT/rl*/drk/final $OUT/rl*/drk/tensorboard $OUT/rl*/drk/rl_config.json $OUT/rl/trl
  ;;
esac
rm -rf $OUT/bench/cache $OUT/bench/sol_*.py
