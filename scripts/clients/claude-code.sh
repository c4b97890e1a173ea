# Claude Code: the pinned line (no onFailure) and the current one (onFailure: "block").
# The native binary comes from an npm optional dependency; postinstall copies it over bin/claude.
install_npm claude-code 2.1.197 "@anthropic-ai/claude-code@2.1.197"
install_npm claude-code 2.1.332 "@anthropic-ai/claude-code@2.1.332"
