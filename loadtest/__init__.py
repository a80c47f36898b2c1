"""Load tests with locust: producers shaped like a busy web app, one command (``make loadtest``)."""
