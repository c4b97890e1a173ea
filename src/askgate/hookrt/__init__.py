"""The hook runtime: one adapter contract, one fail-closed runner, one decision step.

* `reply`: what a hook process does (exit code, stdout, one stderr line); imports nothing.
* `contract`: what an adapter is (`parse`, `render`, `failure`) and the values between them.
* `decide`: the one decision step (policy, gate, approval server, sandbox, audit), the same
  in-process and inside the daemon.
* `registry`: adapters by name (the daemon looks them up there).
* `runner`: the hook process (`askgate hook AGENT`): relay to the daemon, else decide here.

Kept empty: the relay path imports `askgate.hookrt.runner` on every tool call.
"""
