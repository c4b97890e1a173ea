# Sourced by scripts/install-clients. Installs pinned npm packages into
# ${ASKGATE_CLIENTS_DIR:-~/.cache/askgate/clients}/<name>-<version>, outside the checkout, so a fresh
# clone (as CI makes) reuses them. Each install is atomic (a temp dir renamed into place) and
# records a `.ok` marker; an existing marker means "already installed".
CLIENTS_DIR="${ASKGATE_CLIENTS_DIR:-$HOME/.cache/askgate/clients}"

# install_npm NAME VERSION PACKAGE_SPEC... : installs the specs into $CLIENTS_DIR/NAME-VERSION.
install_npm() {
  local name="$1" version="$2"; shift 2
  local dest="$CLIENTS_DIR/$name-$version"
  if [ -f "$dest/.ok" ]; then
    echo "install-clients: $name $version already installed"
    return 0
  fi
  if ! command -v npm >/dev/null 2>&1; then
    echo "install-clients: npm not found; $name $version is not installed (its e2e tests skip, or fail in CI)"
    return 0
  fi
  mkdir -p "$CLIENTS_DIR"
  local tmp; tmp="$(mktemp -d "$CLIENTS_DIR/.$name-$version.XXXXXX")"
  echo '{"name": "askgate-e2e-client", "private": true}' >"$tmp/package.json"
  local started=$SECONDS
  if npm install --prefix "$tmp" --no-audit --no-fund --save-exact "$@" >"$tmp/install.log" 2>&1; then
    touch "$tmp/.ok"
    rm -rf "$dest"
    mv "$tmp" "$dest"
    echo "install-clients: $name $version installed in $((SECONDS - started)) s"
  else
    echo "install-clients: npm install of $name $version failed (see $tmp/install.log)"
  fi
  return 0
}
