"""The schema declares what the daemon answers: a model for every success, the error shape for every error status,
and never the 422 FastAPI would add by default."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient


def operations(schema: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [(method, path, op) for path, ops in schema["paths"].items() for method, op in ops.items()]


def test_every_operation_declares_its_answer_model_and_its_errors(client: TestClient) -> None:
    schema = client.get("/openapi.json").json()
    assert operations(schema)
    for method, path, op in operations(schema):
        responses = op["responses"]
        assert "422" not in responses, (method, path)
        successes = [code for code in responses if code.startswith("2")]
        assert successes, (method, path)
        for code in successes:
            if path == "/api/events":
                assert set(responses[code]["content"]) == {"text/event-stream"}, "the one stream of events"
                continue
            content = responses[code]["content"]["application/json"]["schema"]
            models = content.get("anyOf", [content])  # one model, or one of several (search: complete or compact)
            assert all("$ref" in model for model in models), (method, path, code, content)
        for code in ("400", "401", "403"):
            error = responses[code]["content"]["application/json"]["schema"]
            assert error == {"$ref": "#/components/schemas/ErrorBody"}, (method, path, code)
        if method != "get":
            assert {"409", "413", "415"} <= set(responses), (method, path)
    assert "HTTPValidationError" not in schema["components"]["schemas"]
    error = schema["components"]["schemas"]["ErrorBody"]
    assert set(error["required"]) == {"error", "code", "help"}


def test_a_method_no_route_takes_is_a_405_listing_every_method_of_the_path(client: TestClient) -> None:
    answer = client.put("/api/auth/tokens", json={})
    assert answer.status_code == 405 and answer.headers["allow"] == "GET, POST"
    assert client.post("/api/status", json={}).status_code == 405
    # A POST without JSON to a path that takes no POST is a 405 too, not a 415.
    assert client.post("/api/connectors", content="x", headers={"Content-Type": "text/plain"}).status_code == 405
