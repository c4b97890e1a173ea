"""The approval API's contract: what the approval server (`askgate.server`) and its client
in the gate (`askgate.prompters.server`) share, below both of them.

* `wire`: request bodies, responses and errors as msgspec Structs (the server validates and
  documents them in /openapi.json; the client decodes them).
* `canonical`: canonical JSON (RFC 8785) and the input digest an approval is bound to (the
  server stores it; the client recomputes it before it believes an approval).

Imports nothing else of askgate's, so neither side needs the other (pyproject.toml's import
contracts hold it there).
"""
