"""Adapters: how agents talk to the gate."""
