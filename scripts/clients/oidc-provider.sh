# oidc-provider: a real OpenID Connect provider (panva/node-oidc-provider), started on
# 127.0.0.1 port 0 by the approval server's sign-in tests (tests/oidc_provider.mjs).
install_npm oidc-provider 9.13.3 "oidc-provider@9.13.3"
