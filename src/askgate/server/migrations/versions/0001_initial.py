"""approvals, users, tokens (hashed), enrollments

Revision ID: 0001
Revises:
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "users",
        sa.Column("id", sa.String(200), primary_key=True),
        sa.Column("name", sa.String(200), nullable=False, unique=True),
        sa.Column("tenant", sa.String(200), nullable=False),
        sa.Column("created_at", sa.Float, nullable=False),
    )
    op.create_table(
        "tokens",
        sa.Column("token_sha256", sa.String(64), primary_key=True),
        sa.Column("user_id", sa.String(200), sa.ForeignKey("users.id"), nullable=False),
        sa.Column("scope", sa.String(16), nullable=False),
        sa.Column("created_at", sa.Float, nullable=False),
        sa.Column("revoked_at", sa.Float),
    )
    op.create_table(
        "enrollments",
        sa.Column("user_id", sa.String(200), sa.ForeignKey("users.id"), primary_key=True),
        sa.Column("enrolled_at", sa.Float, nullable=False),
        sa.Column("ntfy_server", sa.Text, nullable=False),
    )
    op.create_table(
        "approvals",
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column("tenant", sa.String(200), nullable=False),
        sa.Column("created_by", sa.String(200), nullable=False),
        sa.Column("session", sa.String(512)),
        sa.Column("agent", sa.String(200)),
        sa.Column("tool", sa.String(512), nullable=False),
        sa.Column("surface", sa.String(64)),
        sa.Column("cwd", sa.Text),
        sa.Column("rule", sa.Text),
        sa.Column("input_json", sa.Text, nullable=False),
        sa.Column("input_sha256", sa.String(64), nullable=False),
        sa.Column("requested_at", sa.Float, nullable=False),
        sa.Column("expires_at", sa.BigInteger, nullable=False),
        sa.Column("decided_at", sa.Float),
        sa.Column("decision", sa.String(16)),
        sa.Column("decided_by", sa.String(200)),
        sa.Column("reason", sa.Text),
        sa.Column("waiter_gave_up_at", sa.Float),
        sa.Column("consumed_at", sa.Float),
    )
    op.create_index("approvals_by_tenant", "approvals", ["tenant", "requested_at"])
    op.create_index("approvals_by_call", "approvals", ["tenant", "session", "tool", "input_sha256"])


def downgrade() -> None:
    op.drop_table("approvals")
    op.drop_table("enrollments")
    op.drop_table("tokens")
    op.drop_table("users")
