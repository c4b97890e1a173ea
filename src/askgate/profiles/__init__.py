"""Fewer questions on real work: `askgate init` (a starter policy from what the project is)
and `askgate suggest` (rules proposed from what people approved). The profiles themselves
are data: src/askgate/policy/builtin/profiles/*.toml."""
