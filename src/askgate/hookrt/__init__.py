"""The hook runtime's lower half: one adapter contract, one decision step.

* `reply`: what a hook process does (exit code, stdout, one stderr line); imports nothing.
* `contract`: what an adapter is (`parse`, `render`, `failure`) and the values between them.
* `decide`: the one decision step (policy, gate, approval server, sandbox, audit), the same
  in-process and inside the daemon.

Above it, one package each (folders are layers, docs/architecture.md): the adapters
(`askgate.adapters`, found by name in `askgate.adapters.registry`), the resident daemon
(`askgate.daemon`) and the hook process (`askgate.hooks.runner`, the one fail-closed runner:
relay to the daemon, else decide here). Kept empty: the relay path imports
`askgate.hookrt.reply` on every tool call.
"""
