"""The approval server: an ask reaches a human on a web page or a phone, bound to the exact
tool input (seed 003). One concept per module: `keys` (canonical JSON, digests, approval keys,
the secret), `store` (SQLAlchemy Core tables and the once-only decision), `wake` (waking
long-polls in process and across replicas), `api` (the /v1 HTTP API), `pages` (the card and the
list), `notify` (ntfy and the signed webhook), `app` (assembly), `cli` (serve, user, enroll),
`doctor` (configuration checks).
"""
