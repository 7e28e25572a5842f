"""API keys scoped to apps: 401 without a valid key, 403 outside its apps."""

import json

import httpx
import pytest

from session_state.core.api_keys import InvalidKeyConfiguration
from session_state.core.config import Settings
from session_state.main import create_app

ALL_APPS_KEY = "all-apps-key-0123456789"
TRAVEL_KEY = "travel-only-key-0123456789"
FILE_KEY = "from-a-file-key-0123456789"


@pytest.fixture
async def secured(database_url, tmp_path):
    keys_file = tmp_path / "keys.json"
    keys_file.write_text(json.dumps({FILE_KEY: ["files"]}))
    settings = Settings(
        database_url=database_url,
        api_keys={ALL_APPS_KEY: ["*"], TRAVEL_KEY: ["travel"]},
        api_keys_file=keys_file,
    )
    app = create_app(settings)
    transport = httpx.ASGITransport(app=app)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http,
    ):
        yield http


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


async def test_without_a_key_every_app_route_is_401_with_a_bearer_challenge(secured):
    for method, path in [
        ("POST", "/apps/travel/users/u/sessions"),
        ("GET", "/apps/travel/users/u/sessions/s"),
        ("GET", "/apps/travel/sessions"),
        ("GET", "/apps/travel/state"),
        ("GET", "/apps/travel/users/u/state"),
    ]:
        response = await secured.request(method, path)
        assert response.status_code == 401, path
        assert response.headers["WWW-Authenticate"] == "Bearer"
        assert response.headers["content-type"] == "application/problem+json"
        assert response.json()["code"] == "unauthorized"


async def test_a_wrong_key_is_401_and_never_echoed(secured):
    response = await secured.get("/apps/travel/state", headers=bearer("not-a-key-0123456789"))
    assert response.status_code == 401
    assert "not-a-key" not in response.text


async def test_a_key_outside_its_apps_is_403(secured):
    response = await secured.post("/apps/billing/users/u/sessions", headers=bearer(TRAVEL_KEY))
    assert response.status_code == 403
    assert response.json()["code"] == "forbidden"


async def test_keys_work_for_their_apps_and_all_apps_keys_for_every_app(secured):
    created = await secured.post("/apps/travel/users/u/sessions", headers=bearer(TRAVEL_KEY))
    assert created.status_code == 201
    other = await secured.post("/apps/billing/users/u/sessions", headers=bearer(ALL_APPS_KEY))
    assert other.status_code == 201
    from_file = await secured.get("/apps/files/state", headers=bearer(FILE_KEY))
    assert from_file.status_code == 200


async def test_authentication_is_checked_before_input_validation(secured):
    response = await secured.get("/apps/travel/sessions?pageSize=0")
    assert response.status_code == 401


async def test_health_readiness_and_docs_stay_open(secured):
    for path in ("/healthz", "/readyz", "/openapi.json", "/docs", "/metrics"):
        assert (await secured.get(path)).status_code == 200, path


@pytest.mark.parametrize(
    "keys", [{"short": ["*"]}, {"long-enough-key-0123": []}, {"long-enough-key-0123": "app"}]
)
def test_unsafe_key_configurations_stop_the_start(keys):
    with pytest.raises((InvalidKeyConfiguration, ValueError)):
        create_app(Settings(api_keys=keys))


async def test_an_erasure_needs_a_key_for_that_app(secured):
    for path, params in [("/apps/hotels/users/ada", {}), ("/apps/hotels", {"confirm": "hotels"})]:
        assert (await secured.delete(path, params=params)).status_code == 401
        refused = await secured.delete(path, params=params, headers=bearer(TRAVEL_KEY))
        assert refused.status_code == 403
        allowed = await secured.delete(path, params=params, headers=bearer(ALL_APPS_KEY))
        assert allowed.status_code == 204
