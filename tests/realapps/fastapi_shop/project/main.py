from fastapi import FastAPI
from pydantic import BaseModel

from project import tasks
from project.celery_utils import create_celery, get_task_info

app = FastAPI()
celery = create_celery()


class Numbers(BaseModel):
    x: int
    y: int


@app.post("/add")
def add(numbers: Numbers):
    return {"task_id": tasks.add.delay(numbers.x, numbers.y).id}


@app.post("/multiply")
def multiply(numbers: Numbers):
    return {"task_id": tasks.slow_multiply.apply_async((numbers.x, numbers.y)).id}


@app.post("/shout/{text}")
def shout(text: str):
    return {"task_id": tasks.shout.delay(text).id}


@app.get("/tasks/{task_id}")
def task_status(task_id: str):
    return get_task_info(task_id)
