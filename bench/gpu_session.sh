#!/usr/bin/env bash
# Every GPU measurement the issues ask for, in one call on the lent H200 (device tool):
#   carry: .whl (wheels: ../shared/device/wheels.sh) and .dev/kb (KernelBench level1/ level2/ copied there;
#   ignored by git, never committed). Writes everything under $OUT; prints a short summary last.
#   run(command="bash bench/gpu_session.sh", carry=[".whl", ".dev"], timeout_s=600)
set -u
export PYTHONPATH=src PYTHONUNBUFFERED=1 DRK_CACHE_DIR=/tmp/drkcache
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:src
fi
KB=${KB:-.dev/kb}
nvidia-smi --query-gpu=name,driver_version,memory.used,clocks.sm,clocks.mem --format=csv
date -u; git log --oneline -1 2>/dev/null
echo "== demo"; timeout ${T_DEMO:-150} python3 -m drk eval --level 1,2 --solutions data/solutions --kernelbench $KB \
  --device cuda --out $OUT/demo --no-compile-baseline 2>&1 | tail -12
echo "== gym bench"; timeout ${T_BENCH:-240} python3 bench/gym_gpu.py --kernelbench $KB --out $OUT/bench 2>&1 | cut -c1-1200
echo "== compile baseline"; timeout ${T_COMPILE:-120} python3 -m drk eval --level 2 --problems 12,76 --solutions data/solutions \
  --kernelbench $KB --device cuda --out $OUT/compile 2>&1 | tail -8
rm -rf $OUT/bench/cache $OUT/bench/sol_*.py
