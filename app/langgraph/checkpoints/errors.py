"""The checkpoint routes' own errors (mapped to problem+json with the rest,
app.http.problems)."""

from ...core.errors import ServiceError


class CheckpointNotFound(ServiceError):
    status = 404
    code = "checkpoint_not_found"
    title = "Checkpoint not found"


class ThreadNotFound(ServiceError):
    status = 404
    code = "thread_not_found"
    title = "Thread not found"


class ThreadAlreadyExists(ServiceError):
    status = 409
    code = "thread_already_exists"
    title = "Thread already exists"


class DeltaChannelThread(ServiceError):
    """keep_latest would cut the history a DeltaChannel's value is rebuilt from."""

    status = 409
    code = "delta_channel_thread"
    title = "The thread uses a DeltaChannel"
