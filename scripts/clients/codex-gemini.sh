# Codex CLI (native binary inside an npm package) and Gemini CLI.
install_npm codex 0.171.0 "@openai/codex@0.171.0"
install_npm gemini 0.61.0 "@google/gemini-cli@0.61.0"
