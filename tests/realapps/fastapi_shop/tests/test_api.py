import time

from fastapi.testclient import TestClient
from project.main import app, celery

client = TestClient(app)


def wait_done(task_id, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        info = client.get(f"/tasks/{task_id}").json()
        if info["task_status"] in ("SUCCESS", "FAILURE"):
            return info
        time.sleep(0.1)
    raise AssertionError(f"task {task_id} did not finish")


def test_add_runs_on_the_high_queue():
    task_id = client.post("/add", json={"x": 2, "y": 3}).json()["task_id"]
    info = wait_done(task_id)
    assert info["task_status"] == "SUCCESS" and info["task_result"] == 5
    assert "done_at" in info
    assert celery.AsyncResult(task_id).queue == "high"


def test_multiply_and_shout():
    multiplied = client.post("/multiply", json={"x": 6, "y": 7}).json()["task_id"]
    shouted = client.post("/shout/hello").json()["task_id"]
    assert wait_done(multiplied)["task_result"] == 42
    assert wait_done(shouted)["task_result"] == "HELLO"
    assert celery.AsyncResult(shouted).queue == "celery"


def test_eager_mode_in_tests():
    celery.conf.task_always_eager = True
    try:
        assert celery.send_task("high:add", (1, 1)).id
        assert app and client.post("/add", json={"x": 1, "y": 1}).status_code == 200
    finally:
        celery.conf.task_always_eager = False
