"""Adapters: how agents talk to the gate.

`registry` finds a hook adapter by name (`claude_code`, `codex`, `gemini`: thin adapters on
askgate.hookrt.contract); `acp` and `pi_rpc` drive agents over their own protocols. The
package sits below the daemon and the hook process (askgate.daemon, askgate.hooks) and above
the decision step (askgate.hookrt), and imports neither of the first two."""
