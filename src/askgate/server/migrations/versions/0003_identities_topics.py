"""sign-in identities (provider subject -> user); rotatable ntfy topics; per-user ntfy tokens

Revision ID: 0003
Revises: 0002
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "identities",
        sa.Column("provider", sa.String(300), primary_key=True),
        sa.Column("subject", sa.String(255), primary_key=True),
        sa.Column("user_id", sa.String(200), sa.ForeignKey("users.id"), nullable=False),
        sa.Column("display", sa.String(200)),
        sa.Column("created_at", sa.Float, nullable=False),
    )
    with op.batch_alter_table("enrollments") as batch:
        batch.add_column(sa.Column("topic_epoch", sa.Integer, nullable=False, server_default="0"))
        batch.add_column(sa.Column("ntfy_token", sa.Text))


def downgrade() -> None:
    with op.batch_alter_table("enrollments") as batch:
        batch.drop_column("ntfy_token")
        batch.drop_column("topic_epoch")
    op.drop_table("identities")
