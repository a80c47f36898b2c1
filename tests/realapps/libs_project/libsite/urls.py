from django.urls import include, path

urlpatterns = [path("celery-progress/", include("celery_progress.urls"))]
