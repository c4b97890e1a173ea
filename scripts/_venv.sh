# Sourced by scripts/*: create .venv and install askgate with its dev, bench and frameworks extras
# when missing or when pyproject.toml changed since the last install.
VENV="${ASKGATE_VENV:-$PWD/.venv}"
PY="${PYTHON:-python3}"
if ! "$PY" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
  echo "askgate needs Python >= 3.11 (found: $("$PY" --version 2>&1))" >&2
  exit 2
fi
if [ ! -x "$VENV/bin/python" ]; then
  "$PY" -m venv "$VENV"
fi
stamp="$VENV/.askgate-installed"
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  "$VENV/bin/python" -m pip install --quiet --upgrade pip >/dev/null
  "$VENV/bin/python" -m pip install --quiet -e ".[dev,bench,frameworks]"
  touch "$stamp"
fi
