"""Celery's ``celery.app.defaults``: every setting Celery knows, by its current (lowercase)
name, with its default; and the old (uppercase) names Celery still accepts with the current
name each stands for. Data only, as Celery 5 documents them ("New lowercase settings");
``app.conf`` (:class:`~pgtasks.compat.celery.app.utils.Settings`) reads them."""

from __future__ import annotations

import datetime as dt
from typing import Any

__all__ = ["CURRENT_NAMES", "DEFAULTS", "NEW_TO_OLD", "OLD_TO_NEW"]

# Old names whose current name is simply the lowercase form (BROKER_URL -> broker_url).
_OLD_SAME_WORDS = """
AZUREBLOCKBLOB_BASE_PATH AZUREBLOCKBLOB_CONNECTION_TIMEOUT AZUREBLOCKBLOB_CONTAINER_NAME
AZUREBLOCKBLOB_READ_TIMEOUT AZUREBLOCKBLOB_RETRY_INCREMENT_BASE
AZUREBLOCKBLOB_RETRY_INITIAL_BACKOFF_SEC AZUREBLOCKBLOB_RETRY_MAX_ATTEMPTS
BROKER_CHANNEL_ERROR_RETRY BROKER_CONNECTION_MAX_RETRIES BROKER_CONNECTION_RETRY
BROKER_CONNECTION_RETRY_ON_STARTUP BROKER_CONNECTION_TIMEOUT BROKER_FAILOVER_STRATEGY
BROKER_HEARTBEAT BROKER_HEARTBEAT_CHECKRATE BROKER_HOST BROKER_LOGIN_METHOD
BROKER_NATIVE_DELAYED_DELIVERY_QUEUE_TYPE BROKER_PASSWORD BROKER_POOL_ACQUIRE_TIMEOUT
BROKER_POOL_LIMIT BROKER_PORT BROKER_READ_URL BROKER_TRANSPORT BROKER_TRANSPORT_OPTIONS BROKER_URL
BROKER_USER BROKER_USE_SSL BROKER_VHOST BROKER_WRITE_URL CASSANDRA_AUTH_KWARGS
CASSANDRA_AUTH_PROVIDER CASSANDRA_BUNDLE_PATH CASSANDRA_ENTRY_TTL CASSANDRA_KEYSPACE
CASSANDRA_OPTIONS CASSANDRA_PORT CASSANDRA_READ_CONSISTENCY CASSANDRA_SERVERS CASSANDRA_TABLE
CASSANDRA_WRITE_CONSISTENCY CONTROL_EXCHANGE CONTROL_QUEUE_DURABLE CONTROL_QUEUE_EXCLUSIVE
CONTROL_QUEUE_EXPIRES CONTROL_QUEUE_TTL COSMOSDBSQL_COLLECTION_NAME COSMOSDBSQL_CONSISTENCY_LEVEL
COSMOSDBSQL_DATABASE_NAME COSMOSDBSQL_MAX_RETRY_ATTEMPTS COSMOSDBSQL_MAX_RETRY_WAIT_TIME
DATABASE_CREATE_TABLES_AT_SETUP DATABASE_ENGINE_CALLBACK DATABASE_TABLE_SCHEMAS ENABLE_UTC
GCS_BASE_PATH GCS_BUCKET GCS_PROJECT GCS_TTL RESULT_ACCEPT_CONTENT S3_ACCESS_KEY_ID S3_BASE_PATH
S3_BUCKET S3_ENDPOINT_URL S3_REGION S3_SECRET_ACCESS_KEY
"""

# Old names whose current name differs in more than case.
_OLD_RENAMED = """
CELERYBEAT_CRON_STARTING_DEADLINE beat_cron_starting_deadline
CELERYBEAT_ENABLE_REMOTE_CONTROL beat_enable_remote_control
CELERYBEAT_MAX_LOOP_INTERVAL beat_max_loop_interval
CELERYBEAT_REMOTE_CONTROL_MAX_TICK_AGE beat_remote_control_max_tick_age
CELERYBEAT_SCHEDULE beat_schedule
CELERYBEAT_SCHEDULER beat_scheduler
CELERYBEAT_SCHEDULE_FILENAME beat_schedule_filename
CELERYBEAT_SYNC_EVERY beat_sync_every
CELERYD_AGENT worker_agent
CELERYD_AUTOSCALER worker_autoscaler
CELERYD_CANCEL_LONG_RUNNING_TASKS_ON_CONNECTION_LOSS worker_cancel_long_running_tasks_on_connection_loss
CELERYD_CONCURRENCY worker_concurrency
CELERYD_CONSUMER worker_consumer
CELERYD_DEDUPLICATE_SUCCESSFUL_TASKS worker_deduplicate_successful_tasks
CELERYD_DETECT_QUORUM_QUEUES worker_detect_quorum_queues
CELERYD_DISABLE_PREFETCH worker_disable_prefetch
CELERYD_ENABLE_PREFETCH_COUNT_REDUCTION worker_enable_prefetch_count_reduction
CELERYD_ENABLE_SOFT_SHUTDOWN_ON_IDLE worker_enable_soft_shutdown_on_idle
CELERYD_ETA_TASK_LIMIT worker_eta_task_limit
CELERYD_HIJACK_ROOT_LOGGER worker_hijack_root_logger
CELERYD_LOG_COLOR worker_log_color
CELERYD_LOG_DATEFMT worker_log_datefmt
CELERYD_LOG_FORMAT worker_log_format
CELERYD_MAX_MEMORY_PER_CHILD worker_max_memory_per_child
CELERYD_MAX_TASKS_PER_CHILD worker_max_tasks_per_child
CELERYD_POOL worker_pool
CELERYD_POOL_PUTLOCKS worker_pool_putlocks
CELERYD_POOL_RESTARTS worker_pool_restarts
CELERYD_POOL_START_METHOD worker_pool_start_method
CELERYD_PREFETCH_MULTIPLIER worker_prefetch_multiplier
CELERYD_PROC_ALIVE_TIMEOUT worker_proc_alive_timeout
CELERYD_SOFT_SHUTDOWN_TIMEOUT worker_soft_shutdown_timeout
CELERYD_STATE_DB worker_state_db
CELERYD_TASK_LOG_DATEFMT worker_task_log_datefmt
CELERYD_TASK_LOG_FORMAT worker_task_log_format
CELERYD_TASK_SOFT_TIME_LIMIT task_soft_time_limit
CELERYD_TASK_TIME_LIMIT task_time_limit
CELERYD_TIMER worker_timer
CELERYD_TIMER_PRECISION worker_timer_precision
CELERYD_WORKER_LOST_WAIT worker_lost_wait
CELERY_ACCEPT_CONTENT accept_content
CELERY_ACKS_LATE task_acks_late
CELERY_ACKS_ON_FAILURE task_acks_on_failure
CELERY_ACKS_ON_FAILURE_OR_TIMEOUT task_acks_on_failure_or_timeout
CELERY_ACKS_ON_TIMEOUT task_acks_on_timeout
CELERY_ALLOW_ERROR_CB_ON_CHORD_HEADER task_allow_error_cb_on_chord_header
CELERY_ALWAYS_EAGER task_always_eager
CELERY_ANNOTATIONS task_annotations
CELERY_ARANGODB_BACKEND_SETTINGS arangodb_backend_settings
CELERY_CACHE_BACKEND cache_backend
CELERY_CACHE_BACKEND_OPTIONS cache_backend_options
CELERY_COUCHBASE_BACKEND_SETTINGS couchbase_backend_settings
CELERY_CREATE_MISSING_QUEUES task_create_missing_queues
CELERY_CREATE_MISSING_QUEUE_EXCHANGE_TYPE task_create_missing_queue_exchange_type
CELERY_CREATE_MISSING_QUEUE_TYPE task_create_missing_queue_type
CELERY_DEFAULT_DELIVERY_MODE task_default_delivery_mode
CELERY_DEFAULT_EXCHANGE task_default_exchange
CELERY_DEFAULT_EXCHANGE_TYPE task_default_exchange_type
CELERY_DEFAULT_PRIORITY task_default_priority
CELERY_DEFAULT_QUEUE task_default_queue
CELERY_DEFAULT_QUEUE_TYPE task_default_queue_type
CELERY_DEFAULT_RATE_LIMIT task_default_rate_limit
CELERY_DEFAULT_ROUTING_KEY task_default_routing_key
CELERY_DISABLE_RATE_LIMITS worker_disable_rate_limits
CELERY_EAGER_PROPAGATES_EXCEPTIONS task_eager_propagates
CELERY_ELASTICSEARCH_MAX_RETRIES elasticsearch_max_retries
CELERY_ELASTICSEARCH_RETRY_ON_TIMEOUT elasticsearch_retry_on_timeout
CELERY_ELASTICSEARCH_SAVE_META_AS_TEXT elasticsearch_save_meta_as_text
CELERY_ELASTICSEARCH_TIMEOUT elasticsearch_timeout
CELERY_ENABLE_REMOTE_CONTROL worker_enable_remote_control
CELERY_EVENT_EXCHANGE event_exchange
CELERY_EVENT_QUEUE_DURABLE event_queue_durable
CELERY_EVENT_QUEUE_EXCLUSIVE event_queue_exclusive
CELERY_EVENT_QUEUE_EXPIRES event_queue_expires
CELERY_EVENT_QUEUE_PREFIX event_queue_prefix
CELERY_EVENT_QUEUE_TTL event_queue_ttl
CELERY_EVENT_SERIALIZER event_serializer
CELERY_IGNORE_RESULT task_ignore_result
CELERY_IMPORTS imports
CELERY_INCLUDE include
CELERY_INHERIT_PARENT_PRIORITY task_inherit_parent_priority
CELERY_MAX_CACHED_RESULTS result_cache_max
CELERY_MESSAGE_COMPRESSION task_compression
CELERY_MONGODB_BACKEND_SETTINGS mongodb_backend_settings
CELERY_QUEUES task_queues
CELERY_QUEUE_MAX_PRIORITY task_queue_max_priority
CELERY_REDIRECT_STDOUTS worker_redirect_stdouts
CELERY_REDIRECT_STDOUTS_LEVEL worker_redirect_stdouts_level
CELERY_REDIS_BACKEND_USE_SSL redis_backend_use_ssl
CELERY_REDIS_DB redis_db
CELERY_REDIS_HOST redis_host
CELERY_REDIS_MAX_CONNECTIONS redis_max_connections
CELERY_REDIS_PASSWORD redis_password
CELERY_REDIS_PORT redis_port
CELERY_REDIS_RETRY_ON_TIMEOUT redis_retry_on_timeout
CELERY_REDIS_SOCKET_CONNECT_TIMEOUT redis_socket_connect_timeout
CELERY_REDIS_SOCKET_KEEPALIVE redis_socket_keepalive
CELERY_REDIS_SOCKET_TIMEOUT redis_socket_timeout
CELERY_REDIS_USERNAME redis_username
CELERY_REJECT_ON_WORKER_LOST task_reject_on_worker_lost
CELERY_REMOTE_TRACEBACKS task_remote_tracebacks
CELERY_REPR_MAXLEVELS task_repr_maxlevels
CELERY_RESULT_BACKEND result_backend
CELERY_RESULT_BACKEND_ALWAYS_RETRY result_backend_always_retry
CELERY_RESULT_BACKEND_BASE_SLEEP_BETWEEN_RETRIES_MS result_backend_base_sleep_between_retries_ms
CELERY_RESULT_BACKEND_MAX_RETRIES result_backend_max_retries
CELERY_RESULT_BACKEND_MAX_SLEEP_BETWEEN_RETRIES_MS result_backend_max_sleep_between_retries_ms
CELERY_RESULT_BACKEND_TRANSPORT_OPTIONS result_backend_transport_options
CELERY_RESULT_CHORD_EXPIRES result_chord_expires
CELERY_RESULT_CHORD_JOIN_TIMEOUT result_chord_join_timeout
CELERY_RESULT_CHORD_RETRY_INTERVAL result_chord_retry_interval
CELERY_RESULT_COMPRESSION result_compression
CELERY_RESULT_DBURI database_url
CELERY_RESULT_DB_SHORT_LIVED_SESSIONS database_short_lived_sessions
CELERY_RESULT_DB_TABLENAMES database_table_names
CELERY_RESULT_ENGINE_OPTIONS database_engine_options
CELERY_RESULT_EXCHANGE result_exchange
CELERY_RESULT_EXCHANGE_TYPE result_exchange_type
CELERY_RESULT_EXTENDED result_extended
CELERY_RESULT_FAILURE_EXPIRES result_failure_expires
CELERY_RESULT_PERSISTENT result_persistent
CELERY_RESULT_SERIALIZER result_serializer
CELERY_RETRY_ON_WORKER_LOST task_retry_on_worker_lost
CELERY_ROUTES task_routes
CELERY_SECURITY_CERTIFICATE security_certificate
CELERY_SECURITY_CERT_STORE security_cert_store
CELERY_SECURITY_DIGEST security_digest
CELERY_SECURITY_KEY security_key
CELERY_SECURITY_KEY_PASSWORD security_key_password
CELERY_SEND_EVENTS worker_send_task_events
CELERY_SEND_TASK_SENT_EVENT task_send_sent_event
CELERY_STORE_EAGER_RESULT task_store_eager_result
CELERY_STORE_ERRORS_EVEN_IF_IGNORED task_store_errors_even_if_ignored
CELERY_TASK_PROTOCOL task_protocol
CELERY_TASK_PUBLISH_RETRY task_publish_retry
CELERY_TASK_PUBLISH_RETRY_POLICY task_publish_retry_policy
CELERY_TASK_RESULT_EXPIRES result_expires
CELERY_TASK_SERIALIZER task_serializer
CELERY_TIMEZONE timezone
CELERY_TRACK_STARTED task_track_started
CELERY_WORKER_DIRECT worker_direct
"""

# Every current setting name.
_CURRENT = """
accept_content arangodb_backend_settings azureblockblob_base_path azureblockblob_connection_timeout
azureblockblob_container_name azureblockblob_read_timeout azureblockblob_retry_increment_base
azureblockblob_retry_initial_backoff_sec azureblockblob_retry_max_attempts
beat_cron_starting_deadline beat_enable_remote_control beat_max_loop_interval
beat_remote_control_max_tick_age beat_schedule beat_schedule_filename beat_scheduler beat_sync_every
broker_channel_error_retry broker_connection_max_retries broker_connection_retry
broker_connection_retry_on_startup broker_connection_timeout broker_failover_strategy
broker_heartbeat broker_heartbeat_checkrate broker_host broker_login_method
broker_native_delayed_delivery_queue_type broker_password broker_pool_acquire_timeout
broker_pool_limit broker_port broker_read_url broker_transport broker_transport_options broker_url
broker_use_ssl broker_user broker_vhost broker_write_url cache_backend cache_backend_options
cassandra_auth_kwargs cassandra_auth_provider cassandra_bundle_path cassandra_entry_ttl
cassandra_keyspace cassandra_options cassandra_port cassandra_read_consistency cassandra_servers
cassandra_table cassandra_write_consistency control_exchange control_queue_durable
control_queue_exclusive control_queue_expires control_queue_ttl cosmosdbsql_collection_name
cosmosdbsql_consistency_level cosmosdbsql_database_name cosmosdbsql_max_retry_attempts
cosmosdbsql_max_retry_wait_time couchbase_backend_settings database_create_tables_at_setup
database_engine_callback database_engine_options database_short_lived_sessions database_table_names
database_table_schemas database_url elasticsearch_max_retries elasticsearch_retry_on_timeout
elasticsearch_save_meta_as_text elasticsearch_timeout enable_utc event_exchange event_queue_durable
event_queue_exclusive event_queue_expires event_queue_prefix event_queue_ttl event_serializer
gcs_base_path gcs_bucket gcs_project gcs_ttl imports include mongodb_backend_settings
redis_backend_use_ssl redis_db redis_host redis_max_connections redis_password redis_port
redis_retry_on_timeout redis_socket_connect_timeout redis_socket_keepalive redis_socket_timeout
redis_username result_accept_content result_backend result_backend_always_retry
result_backend_base_sleep_between_retries_ms result_backend_max_retries
result_backend_max_sleep_between_retries_ms result_backend_transport_options result_cache_max
result_chord_expires result_chord_join_timeout result_chord_retry_interval result_compression
result_exchange result_exchange_type result_expires result_extended result_failure_expires
result_persistent result_serializer s3_access_key_id s3_base_path s3_bucket s3_endpoint_url
s3_region s3_secret_access_key security_cert_store security_certificate security_digest security_key
security_key_password task_acks_late task_acks_on_failure task_acks_on_failure_or_timeout
task_acks_on_timeout task_allow_error_cb_on_chord_header task_always_eager task_annotations
task_compression task_create_missing_queue_exchange_type task_create_missing_queue_type
task_create_missing_queues task_default_delivery_mode task_default_exchange
task_default_exchange_type task_default_priority task_default_queue task_default_queue_type
task_default_rate_limit task_default_routing_key task_eager_propagates task_ignore_result
task_inherit_parent_priority task_protocol task_publish_retry task_publish_retry_policy
task_queue_max_priority task_queues task_reject_on_worker_lost task_remote_tracebacks
task_repr_maxlevels task_retry_on_worker_lost task_routes task_send_sent_event task_serializer
task_soft_time_limit task_store_eager_result task_store_errors_even_if_ignored task_time_limit
task_track_started timezone worker_agent worker_autoscaler
worker_cancel_long_running_tasks_on_connection_loss worker_concurrency worker_consumer
worker_deduplicate_successful_tasks worker_detect_quorum_queues worker_direct
worker_disable_prefetch worker_disable_rate_limits worker_enable_prefetch_count_reduction
worker_enable_remote_control worker_enable_soft_shutdown_on_idle worker_eta_task_limit
worker_hijack_root_logger worker_log_color worker_log_datefmt worker_log_format worker_lost_wait
worker_max_memory_per_child worker_max_tasks_per_child worker_pool worker_pool_putlocks
worker_pool_restarts worker_pool_start_method worker_prefetch_multiplier worker_proc_alive_timeout
worker_redirect_stdouts worker_redirect_stdouts_level worker_send_task_events
worker_soft_shutdown_timeout worker_state_db worker_task_log_datefmt worker_task_log_format
worker_timer worker_timer_precision
"""

CURRENT_NAMES: frozenset[str] = frozenset(_CURRENT.split())
OLD_TO_NEW: dict[str, str] = {
    **{old: old.lower() for old in _OLD_SAME_WORDS.split()},
    **dict(line.split() for line in _OLD_RENAMED.strip().splitlines()),
}
NEW_TO_OLD: dict[str, str] = {new: old for old, new in OLD_TO_NEW.items()}

# Celery's defaults of its settings (those Celery leaves None are None here too), but for
# beat_scheduler and worker_pool, which pgtasks decides when they are not set.
_READ: dict[str, Any] = {
    "accept_content": ("json",),
    "azureblockblob_base_path": "",
    "azureblockblob_connection_timeout": 20,
    "azureblockblob_container_name": "celery",
    "azureblockblob_read_timeout": 120,
    "azureblockblob_retry_increment_base": 2,
    "azureblockblob_retry_initial_backoff_sec": 2,
    "azureblockblob_retry_max_attempts": 3,
    "beat_max_loop_interval": 0,
    "beat_schedule": {},
    "beat_schedule_filename": "celerybeat-schedule",
    "beat_sync_every": 0,
    "broker_channel_error_retry": False,
    "broker_connection_max_retries": 100,
    "broker_connection_retry": True,
    "broker_connection_timeout": 4,
    "broker_heartbeat": 120,
    "broker_heartbeat_checkrate": 3.0,
    "broker_native_delayed_delivery_queue_type": "quorum",
    "broker_pool_limit": 10,
    "broker_transport_options": {},
    "broker_use_ssl": False,
    "cache_backend_options": {},
    "cassandra_options": {},
    "control_exchange": "celery",
    "control_queue_expires": 10.0,
    "control_queue_ttl": 300.0,
    "cosmosdbsql_collection_name": "celerycol",
    "cosmosdbsql_consistency_level": "Session",
    "cosmosdbsql_database_name": "celerydb",
    "cosmosdbsql_max_retry_attempts": 9,
    "cosmosdbsql_max_retry_wait_time": 30,
    "database_create_tables_at_setup": True,
    "database_short_lived_sessions": False,
    "elasticsearch_save_meta_as_text": True,
    "enable_utc": True,
    "event_exchange": "celeryev",
    "event_queue_expires": 60.0,
    "event_queue_prefix": "celeryev",
    "event_queue_ttl": 5.0,
    "event_serializer": "json",
    "gcs_base_path": "",
    "gcs_ttl": 0,
    "imports": (),
    "include": (),
    "redis_retry_on_timeout": False,
    "redis_socket_keepalive": False,
    "redis_socket_timeout": 120.0,
    "result_backend_always_retry": False,
    "result_backend_base_sleep_between_retries_ms": 10,
    "result_backend_max_retries": float("inf"),
    "result_backend_max_sleep_between_retries_ms": 10000,
    "result_backend_transport_options": {},
    "result_cache_max": -1,
    "result_chord_join_timeout": 3.0,
    "result_chord_retry_interval": 1.0,
    "result_exchange": "celeryresults",
    "result_exchange_type": "direct",
    "result_expires": dt.timedelta(days=1),
    "result_extended": False,
    "result_serializer": "json",
    "security_digest": "sha256",
    "task_acks_late": False,
    "task_acks_on_failure_or_timeout": True,
    "task_allow_error_cb_on_chord_header": False,
    "task_always_eager": False,
    "task_create_missing_queues": True,
    "task_default_delivery_mode": 2,
    "task_default_exchange_type": "direct",
    "task_default_queue": "celery",
    "task_default_queue_type": "classic",
    "task_eager_propagates": False,
    "task_ignore_result": False,
    "task_inherit_parent_priority": False,
    "task_protocol": 2,
    "task_publish_retry": True,
    "task_publish_retry_policy": {
        "max_retries": 3,
        "interval_start": 0,
        "interval_max": 1,
        "interval_step": 0.2,
    },
    "task_remote_tracebacks": False,
    "task_send_sent_event": False,
    "task_serializer": "json",
    "task_store_eager_result": False,
    "task_store_errors_even_if_ignored": False,
    "task_track_started": False,
    "worker_autoscaler": "celery.worker.autoscale:Autoscaler",
    "worker_cancel_long_running_tasks_on_connection_loss": False,
    "worker_consumer": "celery.worker.consumer:Consumer",
    "worker_deduplicate_successful_tasks": False,
    "worker_detect_quorum_queues": True,
    "worker_direct": False,
    "worker_disable_rate_limits": False,
    "worker_enable_prefetch_count_reduction": True,
    "worker_enable_remote_control": True,
    "worker_enable_soft_shutdown_on_idle": False,
    "worker_hijack_root_logger": True,
    "worker_log_format": "[%(asctime)s: %(levelname)s/%(processName)s] %(message)s",
    "worker_lost_wait": 10.0,
    "worker_pool_putlocks": True,
    "worker_pool_restarts": False,
    "worker_prefetch_multiplier": 4,
    "worker_proc_alive_timeout": 4.0,
    "worker_redirect_stdouts": True,
    "worker_redirect_stdouts_level": "WARNING",
    "worker_send_task_events": False,
    "worker_soft_shutdown_timeout": 0.0,
    "worker_task_log_format": (
        "[%(asctime)s: %(levelname)s/%(processName)s] %(task_name)s[%(task_id)s]: %(message)s"
    ),
    "worker_timer_precision": 1.0,
}
# Every setting with its default, as Celery's DEFAULTS.
DEFAULTS: dict[str, Any] = {name: _READ.get(name) for name in sorted(CURRENT_NAMES)}
