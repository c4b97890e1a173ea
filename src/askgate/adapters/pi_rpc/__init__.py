"""Drive pi `--mode rpc` workers: strict-LF frame codec, client, dialog policy, runner."""
