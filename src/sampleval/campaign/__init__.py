"""Judging campaigns with people (docs/guide/campaigns.md).

The store: :mod:`.models` (SQLAlchemy tables), :mod:`.store` (engines, write transactions,
the Alembic migrations in ``migrations/`` applied on open). The service layer, the only code
that touches selectors and the store together: :mod:`.organise` (create, people, progress,
current sample, export, estimates), :mod:`.service` (assessors: next document, judging,
undo, batches), :mod:`.group_commit`, :mod:`.live` (estimates in a worker process). The web
app on top: :mod:`.web` (app, authentication, security middleware), :mod:`.api` (JSON),
:mod:`.pages` (server-rendered pages; ``templates/``, ``static/``). Readers: :mod:`.corpus`,
:mod:`.topics`; label rules: :mod:`.labels`. Running and driving servers: :mod:`.server`,
:mod:`.simulation`, :mod:`.devdb` (a throwaway PostgreSQL). The command line is
``sampleval.cli.campaign``. Heavy imports (FastAPI, SQLAlchemy) happen only when these modules
are imported, never by ``sampleval --help``.
"""
