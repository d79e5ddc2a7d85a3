"""The trusted judge: one process per evaluation slot that never runs candidate code.

`evaluation` (`python -m drk.gym.judge.evaluation`) builds the reference from the task, makes every input,
computes the expected outputs, holds the candidate's time budget and turns evidence into one verdict;
`checks` is the order of one evaluation (trials and probes at random positions, timing, caching, profile);
`static` parses the candidate's source before anything runs (and names the `@triton.jit` kernels coverage
may count); `forkserver` is the judge's client of the sandbox's fork server; `launchers` builds Triton's
per-signature launchers for candidates under the exec guard (from type names, never their source);
`refcache` caches reference timings.

Guarantee of this layer: every fact the reward depends on (correctness, which of the declared kernels
ran, the runtime bound by the judge's own clock) is established here, outside the candidate's reach.
"""
