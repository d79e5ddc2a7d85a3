"""How evaluation requests reach judges and results come back: `pool` (local slots, task affinity,
deadlines, re-running a suspect failure alone), `backends` (`make_gym`: local, HTTP, Ray, cached),
`cache` (SQLite, keyed by task, candidate, protocol and environment), `ray_backend`, and the service:
`server` (drk's `/v1` routes and KernelGYM's), `kernelgym` (protocol mapping), `access` (who may reach
it) and `limits` (server-side maxima and the options a client may set).

Guarantee of this layer: a result is never blamed on the candidate for the infrastructure's failure
(`infra_error`, retried, never cached), and no client can reach an option that weakens the evaluator.
"""
