"""The resident decider (`askgate daemon`): policies compiled and the bash parser warm,
answering Claude Code's http hooks on 127.0.0.1 and the command hook's relay on a Unix
socket. Kept empty: the relay imports `askgate.daemon.relay` on every tool call."""
