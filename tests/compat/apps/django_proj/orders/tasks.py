from celery import shared_task


@shared_task
def total(prices):
    return sum(prices)


@shared_task
def ship(order_id):
    return f"shipped {order_id}"
