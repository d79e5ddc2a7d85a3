"""What runs next to candidate code: the untrusted side of the trust boundary.

Everything here executes inside the OS sandbox, in processes that candidate code shares or can reach:
`isolation` builds the bubblewrap command (no network, own PID/IPC/UTS namespaces, a read-only view of only
what the interpreter needs, private /tmp) and refuses when the host offers none; `zygote` is the fork
server inside it (never initialises CUDA; forks one fresh, unprivileged process per candidate, applies
rlimits, kills everything the candidate started, and under the exec guard makes every writable folder
noexec); `runner` is the only code that executes candidate code; `launchers` makes its Triton load native
modules only from the read-only folders the judge fills;
`audit`, `integrity` and `triton_hooks` are early, in-process layers (clear messages, launch records).

Guarantee of this layer: a candidate cannot touch the host, the network, other candidates or the judge's
memory (the operating system's). Not a guarantee: anything the candidate's own process reports: the judge
(`drk.gym.judge`) treats it as a claim to check, never as evidence.
"""
