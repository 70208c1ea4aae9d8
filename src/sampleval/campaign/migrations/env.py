"""Alembic's environment for the campaign store: migrations run on the connection that
:func:`sampleval.campaign.schema.migrate` passes in (``config.attributes["connection"]``)."""

from __future__ import annotations

from alembic import context

from sampleval.campaign.models import Base

connection = context.config.attributes["connection"]
context.configure(connection=connection, target_metadata=Base.metadata,
                  render_as_batch=connection.dialect.name == "sqlite")
with context.begin_transaction():
    context.run_migrations()
