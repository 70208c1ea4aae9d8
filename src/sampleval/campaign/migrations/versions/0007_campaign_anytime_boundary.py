"""A campaign keeps the anytime boundary it began under (issue 32): the range boundary
became ``--stop anytime``'s default after revision 0004's campaigns were created with the
normal mixture, and a boundary changed between looks is no longer anytime-valid. So the
campaigns stored with ``target_stop = 'anytime'`` become ``anytime-mixture``
(:data:`sampleval.judging.confident.MIXTURE_STOP`), which keeps the mixture; the downgrade
turns them back.

Rows updated in place (no table rebuilt).

Revision ID: 0007
Revises: 0006
"""

from __future__ import annotations

from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("UPDATE campaigns SET target_stop = 'anytime-mixture' "
               "WHERE target_stop = 'anytime'")


def downgrade() -> None:
    op.execute("UPDATE campaigns SET target_stop = 'anytime' "
               "WHERE target_stop = 'anytime-mixture'")
