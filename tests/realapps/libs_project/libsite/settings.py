import os

SECRET_KEY = "libs-project-only"
DEBUG = False
ALLOWED_HOSTS = ["*"]
INSTALLED_APPS = ["djcelery_email", "celery_progress", "jobs"]
MIDDLEWARE = []
ROOT_URLCONF = "libsite.urls"
DATABASES = {}
USE_TZ = True

CELERY_BROKER_URL = os.environ["CELERY_BROKER_URL"]

# django-celery-email: mail goes through its task; the task sends with the inner backend
EMAIL_BACKEND = "djcelery_email.backends.CeleryEmailBackend"
CELERY_EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"

# celery-once: its file backend
CELERY_ONCE = {
    "backend": "celery_once.backends.File",
    "settings": {"location": os.environ["ONCE_DIR"], "default_timeout": 60},
}

# celery-singleton: its Redis backend (the broker URL is the database, so named here)
CELERY_SINGLETON_BACKEND_URL = os.environ["SINGLETON_REDIS_URL"]
