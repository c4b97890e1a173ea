"""approver groups; the waiter's deadline, late answers and the consuming call on approvals

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "approver_groups",
        sa.Column("name", sa.String(100), primary_key=True),
        sa.Column("created_at", sa.Float, nullable=False),
    )
    op.create_table(
        "group_approvers",
        sa.Column(
            "group_name", sa.String(100), sa.ForeignKey("approver_groups.name"), primary_key=True
        ),
        sa.Column("user_id", sa.String(200), sa.ForeignKey("users.id"), primary_key=True),
        sa.Column("added_at", sa.Float, nullable=False),
    )
    with op.batch_alter_table("approvals") as batch:
        batch.add_column(sa.Column("wait_until", sa.Float))
        batch.add_column(sa.Column("late", sa.String(8)))
    op.create_index("approvals_by_binding", "approvals", ["created_by", "tool", "input_sha256"])
    # Round 1 put everyone in tenant "default": each person becomes their own tenant. A tenant
    # an operator named on purpose (`--tenant team`) becomes a group whose approvers are the
    # people who shared it, so nobody loses access they were given, and nobody gains any.
    legacy = "tenant NOT LIKE 'user:%' AND tenant NOT LIKE 'group:%'"
    op.execute(
        "INSERT INTO approver_groups (name, created_at) SELECT DISTINCT tenant, 0 FROM users "
        f"WHERE {legacy} AND tenant <> 'default' AND length(tenant) <= 100"
    )
    op.execute(
        "INSERT INTO group_approvers (group_name, user_id, added_at) SELECT tenant, id, 0 "
        "FROM users WHERE tenant IN (SELECT name FROM approver_groups)"
    )
    op.execute(
        "UPDATE approvals SET tenant = 'group:' || tenant "
        "WHERE tenant IN (SELECT name FROM approver_groups)"
    )
    op.execute(f"UPDATE approvals SET tenant = 'user:' || created_by WHERE {legacy}")
    op.execute(
        "UPDATE users SET tenant = 'group:' || tenant "
        "WHERE tenant IN (SELECT name FROM approver_groups)"
    )
    op.execute(f"UPDATE users SET tenant = 'user:' || id WHERE {legacy}")


def downgrade() -> None:
    op.drop_index("approvals_by_binding", "approvals")
    with op.batch_alter_table("approvals") as batch:
        batch.drop_column("late")
        batch.drop_column("wait_until")
    op.drop_table("group_approvers")
    op.drop_table("approver_groups")
