"""Alembic migrations of the approval server (run automatically by `Store.open`)."""
