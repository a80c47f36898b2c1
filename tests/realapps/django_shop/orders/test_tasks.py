from django_celery_beat.models import CrontabSchedule, PeriodicTask

from orders.tasks import add


def test_eager_mode_flipped_by_the_settings_fixture(settings):
    settings.CELERY_TASK_ALWAYS_EAGER = True
    result = add.delay(2, 3)
    assert result.get(timeout=30) == 5 and result.successful()


def test_periodic_tasks_are_models(db):
    schedule = CrontabSchedule.objects.create(minute="0", hour="4")
    PeriodicTask.objects.create(name="nightly", task="orders.tasks.add", crontab=schedule, args="[1, 2]")
    assert PeriodicTask.objects.get(name="nightly").crontab.schedule is not None
