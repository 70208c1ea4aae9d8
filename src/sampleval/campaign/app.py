"""The campaign server's app: FastAPI over the service layer, with the JSON API (:mod:`.api`)
and the server-rendered pages (:mod:`.pages`); what they share (who calls, the security
model, the templates) is :mod:`.web`."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.staticfiles import StaticFiles

from sampleval import __version__
from sampleval.campaign import api, pages
from sampleval.campaign.hot import HotPaths
from sampleval.campaign.live import LiveEstimates
from sampleval.campaign.service import CampaignService, ServiceError
from sampleval.campaign.store import Store
from sampleval.campaign.web import HERE, Guard
from sampleval.errors import SampleValError

CHECKPOINT_EVERY = 1.0
"""Seconds between the server's WAL checkpoints on SQLite (:class:`.store.Store`: off the
commit path)."""


def create_app(url: str, *, live: bool = True, interval: float = 2.0,
               public_url: str | None = None, trusted_proxies: Sequence[str] = (),
               freeze: bool = False) -> FastAPI:
    """The campaign server over the store at ``url`` (migrated on start). ``live``:
    recompute estimates in a worker process, at most every ``interval`` seconds per
    campaign. ``public_url``: the address browsers reach it at (behind a reverse proxy);
    ``trusted_proxies``: addresses or networks of proxies whose ``X-Forwarded-Host`` and
    ``X-Forwarded-Proto`` are believed (:class:`Guard`). ``freeze``: once the campaigns
    are loaded, exempt what the process holds then from garbage collection
    (:func:`freeze_heap`; ``serve`` does, tests in a shared process do not)."""
    store = Store(url, checkpoint_every=CHECKPOINT_EVERY)
    estimates = LiveEstimates(store, interval)
    service = CampaignService(store, on_judgment=estimates.poke if live else None)
    estimates.on_stop = service.stop

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        service.load_all()
        if live:
            estimates.start()
            for campaign_id in service.campaign_ids():
                estimates.poke(campaign_id)
        if freeze:
            freeze_heap()
        yield
        if live:
            estimates.close()
        service.close()
        store.close()

    app = FastAPI(title="sampleval campaigns", version=__version__, lifespan=lifespan,
                  docs_url=None, redoc_url=None, openapi_url="/api/openapi.json",
                  description="Judge documents chosen by a selection method; watch the "
                              "estimates; export the sample (docs/guide/campaigns.md).")
    app.state.service = service
    app.state.live = estimates if live else None
    app.add_middleware(HotPaths)  # (inside Guard: the last added is the outermost)
    app.add_middleware(Guard, public_url=public_url, trusted_proxies=list(trusted_proxies))
    app.include_router(api.router)
    app.include_router(pages.router)
    app.mount("/static", StaticFiles(directory=str(HERE / "static")), name="static")

    @app.exception_handler(ServiceError)
    async def refused(request: Request, exc: ServiceError) -> JSONResponse:
        return JSONResponse({"detail": exc.message}, status_code=exc.status)

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        # the inputs are not echoed: they may be huge, hostile, or not JSON (NaN)
        errors = [{"loc": [str(part) for part in error.get("loc", ())],
                   "msg": str(error.get("msg", "")), "type": str(error.get("type", ""))}
                  for error in exc.errors()]
        return JSONResponse({"detail": errors}, status_code=422)

    @app.exception_handler(SampleValError)
    async def unusable(request: Request, exc: SampleValError) -> JSONResponse:
        return JSONResponse({"detail": str(exc)}, status_code=422)

    return app


def freeze_heap() -> None:
    """Collect the garbage, then move every object this process holds into the garbage
    collector's permanent generation (``gc.freeze``), which its collections skip.

    What a server holds once started (the imported libraries, the loaded campaigns: about
    a quarter of a million objects) lives as long as it does, yet each collection of the
    oldest generation walks all of it while holding the interpreter lock, and every
    request waits for it: on a busy machine such a pause made the tail of the judge
    requests' latency (benchmarks/README.md). Frozen, a collection walks only what was
    made since the server started. Campaigns loaded later (created while the server
    runs) are not frozen."""
    import gc

    gc.collect()
    gc.freeze()
