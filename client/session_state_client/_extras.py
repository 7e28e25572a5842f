"""The error an adapter raises when its framework is not installed."""


def extra_missing(module: str, framework: str, extra: str, error: ImportError) -> ImportError:
    """An ImportError naming the extra that brings `framework`, with the
    import that failed, instead of a bare "No module named 'google'"."""
    return ImportError(
        f"{module} needs {framework}: pip install 'session-state-client[{extra}]' ({error})",
        name=module,
    )
