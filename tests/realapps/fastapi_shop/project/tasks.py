from celery import shared_task


@shared_task(name="high:add")
def add(x, y):
    return x + y


@shared_task(name="low:slow_multiply", bind=True)
def slow_multiply(self, x, y):
    self.update_state(state="PROGRESS", meta={"step": 1})
    return x * y


@shared_task
def shout(text):
    return text.upper()
