"""The OpenAI Agents SDK's own session tests, run against SessionStateSession on
a started server of each backend.

The SDK's sdist on PyPI holds its tests. At test time the sdist of the installed
version is downloaded (once, into a cache directory) and extracted, and its
session suites run in a pytest process of their own with
tests/client/openai_sdk_suite_plugin.py, which makes every session they
construct (SQLiteSession, SQLAlchemySession, RedisSession, MongoDBSession, the
human-in-the-loop scenario's list session) a SessionStateSession on our server.
Nothing of the SDK is copied into this repository.

Tests of a backend's internals are deselected by the list below, each group with
its reason. Each test of the suite has a timeout, so a hang fails. Without
network the test skips, saying so, except with CI set, where it fails.
"""

import contextlib
import fcntl
import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import xml.etree.ElementTree as ElementTree
from collections.abc import Iterator
from pathlib import Path
from typing import NoReturn

import pytest

from tests.conftest import ServerProcess, unavailable

DISTRIBUTION = "openai-agents"
PLUGIN = Path(__file__).with_name("openai_sdk_suite_plugin.py")
CACHE = Path(os.environ.get("SESSION_STATE_TEST_CACHE", Path(tempfile.gettempdir())))
PER_TEST_TIMEOUT_SECONDS = 60
SUITE_TIMEOUT_SECONDS = 1800
DOWNLOAD_TIMEOUT_SECONDS = 600
# 137 pass at openai-agents 0.25.0 (3 skip: they need a real Redis); fewer
# means tests stopped running, not that they pass.
MIN_PASSED = 130

# The SDK's generic session suites (their paths inside the sdist).
SESSION_TESTS = "tests/memory/test_session.py"
LIMIT_TESTS = "tests/memory/test_session_limit.py"
SQLALCHEMY_TESTS = "tests/extensions/memory/test_sqlalchemy_session.py"
REDIS_TESTS = "tests/extensions/memory/test_redis_session.py"
MONGODB_TESTS = "tests/extensions/memory/test_mongodb_session.py"
HITL_TESTS = "tests/test_hitl_session_scenario.py"
SUITE = (SESSION_TESTS, LIMIT_TESTS, SQLALCHEMY_TESTS, REDIS_TESTS, MONGODB_TESTS, HITL_TESTS)

# Deselected: tests of a backend's internals, by test function (all its
# parameters) or by test id (one parameter). A name that no longer exists in
# the suite fails the test, so the list cannot rot.
EXCLUDED: dict[str, list[str]] = {
    SESSION_TESTS: [
        # SQLiteSession's sqlite3 connections per worker thread, its file lock,
        # its transactions (they probe the file, patch sqlite3.Connection).
        "test_sqlite_session_close_closes_worker_thread_connections",
        "test_sqlite_session_reaps_connections_from_exited_worker_threads",
        "test_sqlite_session_closes_retired_connections_before_the_next_allocation",
        "test_sqlite_session_keeps_connections_of_live_worker_threads",
        "test_sqlite_session_file_lock_is_shared_across_instances",
        "test_sqlite_session_failed_add_items_releases_write_lock",
        "test_sqlite_session_failed_clear_session_rolls_back",
        "test_sqlite_session_failed_pop_item_releases_write_lock",
        "test_sqlite_session_rollback_failure_evicts_connection",
        "test_sqlite_session_close_retries_quarantined_connection",
        "test_sqlite_session_post_commit_cancellation_propagates_after_known_outcome",
        # Undecodable rows written straight into its table (our server stores
        # JSON only; events without an item are skipped, as tested in
        # tests/client/test_openai_sessions.py).
        "test_sqlite_session_pop_item_skips_corrupt_most_recent",
        "test_sqlite_session_pop_item_returns_none_after_dropping_only_corrupt_rows",
        "test_sqlite_session_get_items_limit_skips_corrupt_newest_rows",
        "test_sqlite_session_get_items_session_settings_limit_skips_corrupt_rows",
    ],
    SQLALCHEMY_TESTS: [
        # The text of its JSON column (ensure_ascii).
        "test_sqlalchemy_session_defaults_to_escaped_non_ascii_storage",
        "test_sqlalchemy_session_can_store_non_ascii_without_escaping",
        # Its SQL statements and transactions, patched or timed.
        "test_sqlite_fallback_reserves_writer_before_tail_claim",
        "test_pop_item_supports_unknown_delete_rowcount",
        "test_pop_item_retries_returning_claim_lost_to_concurrent_delete",
        "test_mutation_cancellation_waits_for_transaction_exit",
        "test_add_items_waits_for_transient_sqlite_write_lock",
        # Rows written straight into its tables: undecodable, or with equal
        # timestamps (our server orders events by their place, not by time).
        "test_pop_item_skips_corrupt_most_recent",
        "test_get_items_limit_skips_corrupt_newest_rows",
        "test_pop_item_returns_none_after_dropping_only_corrupt_rows",
        "test_get_items_same_timestamp_consistent_order",
        "test_pop_item_same_timestamp_returns_latest",
        # A row's stored time rewritten into the past: our server orders
        # events by their place, so a backdated one stays the latest
        # (tests/client/test_openai_sessions.py has the same case).
        "test_backdated_append_remains_the_latest_item",
        # Its table-creation locks, its engine and its engine registry.
        "test_add_items_cancelled_waiter_does_not_strand_table_init_lock",
        "test_create_tables_false_does_not_allocate_shared_init_lock",
        "test_engine_property_from_url",
        "test_engine_property_from_external_engine",
        "test_engine_property_is_read_only",
        "test_sqlite_configuration_registry_releases_collected_engines",
        "test_sqlite_configuration_registry_does_not_grow_unbounded",
    ],
    REDIS_TESTS: [
        # Redis keys, key types, counters and metadata hashes, written or read
        # with the Redis client; Redis Cluster.
        "test_redis_session_rejects_cluster_transactions_before_pipeline",
        "test_redis_cluster_reads_and_subclass_writes",
        "test_colliding_session_clear_preserves_existing_session",
        "test_colliding_counter_rejects_ttl_write_before_side_effects",
        "test_clear_rechecks_key_types_after_concurrent_replacement",
        "test_released_redis_layout_remains_usable",
        "test_get_next_id_method",
        "test_add_items_preserves_created_at_metadata",
        "test_get_items_limit_skips_corrupt_newest_messages",
        "test_corrupted_data_handling",
        "test_add_items_rejects_wrong_metadata_key_type_before_writing",
        "test_decode_responses_client_compatibility",
        "test_real_redis_decode_responses_compatibility",
        # TTL (expiry here is the server's, SESSION_STATE_DEFAULT_TTL_SECONDS).
        "test_ttl_functionality",
        "test_add_items_applies_ttl_in_the_write_transaction",
        "test_add_items_rejects_unrepresentable_ttl_before_writing",
        "test_add_items_uses_server_absolute_expiration_after_serialization",
        "test_add_items_refreshes_server_timestamps_after_watch_retry",
        # ping() is not part of the Session protocol (the plugin's stand-in
        # answers True so that their helpers run).
        "test_redis_connectivity",
        "test_ping_connection_failure",
        "test_redis_session_ping_raises_after_close",
        # Its Redis client's close, patched or shared with the test.
        "test_close_method_coverage",
        "test_redis_session_failed_cleanup_is_terminal_and_retried",
        "test_redis_session_cancelled_cleanup_is_terminal_and_retried",
        "test_redis_session_operation_waiting_behind_close_raises",
        # WATCH/MULTI/EXEC pipelines and the connection pool, patched.
        "test_mutation_cancellation_waits_for_authoritative_outcome",
        "test_ambiguous_exec_watch_error_is_not_retried",
        "test_redis81_standard_pool_checkout_records_native_observability",
        "test_redis8_blocking_pool_checkout_preserves_native_timing",
        "test_add_items_with_ttl_supports_single_connection_pool",
        "test_cancelled_watch_releases_single_connection_pool",
        "test_cancelled_in_flight_watch_command_reconnects_before_pool_reuse",
        "test_cancelled_connection_acquisition_is_discarded_before_release",
        "test_post_commit_cancellation_propagates_after_cleanup",
        "test_post_commit_response_callback_failure_does_not_retry",
        "test_successful_batch_response_with_sibling_error_does_not_retry",
        "test_post_commit_reset_self_cancellation_does_not_cancel_caller",
        "test_post_commit_reset_failure_detaches_without_release_listener",
        "test_reconnect_required_release_detaches_without_listener_reborrow",
        "test_reconnect_marked_inside_release_failure_is_detached",
        "test_post_commit_release_listener_failure_does_not_retry",
        "test_pre_exec_close_failure_is_quarantined",
        "test_pre_exec_cancellation_skips_pipeline_reset",
        "test_blocking_pool_cancellation_completion_owns_release",
        "test_ordinary_pool_cancellation_completion_owns_release",
        "test_transparent_overridden_pool_release_is_supported",
        "test_release_failure_after_reborrow_preserves_new_borrower",
        "test_post_commit_disconnect_failure_is_not_retryable",
        "test_post_commit_detached_close_failure_is_quarantined",
        "test_blocking_pool_listener_failure_notifies_waiter",
        "test_blocking_pool_detached_disconnect_notifies_waiter",
        "test_post_commit_internal_reset_failure_does_not_report_write_failure",
        # Compaction through RedisSession's own atomic replacement of its keys.
        "test_compaction_replaces_redis_history_atomically",
        "test_atomic_replacement_preserves_clear_add_metadata",
        "test_atomic_replacement_serializes_before_deleting_history",
        "test_compaction_subclass_retains_overridden_storage_methods",
        "test_compaction_cancel_after_redis_commit_invalidates_cached_history",
        "test_atomic_replacement_rejects_colliding_counter_key",
        "test_cancelled_redis_compaction_handoff_remains_resumable",
        "test_redis_compaction_preserves_encryption_wrapper",
    ],
    MONGODB_TESTS: [
        # Documents of its collections (metadata, batches, generations,
        # sequence numbers, legacy per-item documents), read or written
        # directly; its indexes.
        "test_clear_session",
        "test_clear_session_partial_cleanup_failure_is_logically_atomic",
        "test_generation_reads_use_primary_after_failed_clear_cleanup",
        "test_clear_session_hides_add_reserved_before_generation_advance",
        "test_pop_rechecks_generation_after_concurrent_clear",
        "test_session_metadata_timestamps_are_written",
        "test_corrupted_document_is_skipped",
        "test_missing_message_data_field_is_skipped",
        "test_non_string_message_data_is_skipped",
        "test_get_items_limit_skips_corrupt_newest_docs",
        "test_pop_item_skips_corrupt_most_recent",
        "test_pop_item_returns_none_when_only_corrupt_docs_remain",
        "test_index_creation_runs_only_once",
        "test_different_clients_each_run_index_init",
        "test_add_items_serializes_before_reserving_sequence_numbers",
        "test_add_items_is_invisible_until_single_document_commit",
        "test_concurrent_pop_item_claims_distinct_items_from_batch",
        "test_pop_item_atomically_selects_newest_concurrent_batch",
        "test_pop_item_deletes_exhausted_batch_document",
        "test_pop_item_cancellation_waits_for_exhausted_batch_cleanup",
        "test_mutation_cancellation_waits_for_authoritative_outcome",
        "test_pop_item_cleanup_failure_does_not_hide_known_claim",
        "test_reads_legacy_item_documents_with_new_batch_documents",
        # Its MongoDB client: driver metadata, close patched or checked.
        "test_injected_client_receives_append_metadata",
        "test_from_uri_passes_driver_info_to_constructor",
        "test_caller_supplied_driver_info_is_not_overwritten",
        "test_close_owned_client_is_closed",
        "test_failed_close_is_terminal_and_can_be_retried",
        "test_cancelled_close_is_terminal_and_can_be_retried",
        # ping() is not part of the Session protocol.
        "test_ping_success",
        "test_ping_failure",
        "test_ping_on_closed_session_raises",
        # A documented difference (docs/clients.md, "OpenAI Agents SDK"): the empty
        # session id is refused (422), as every identifier of the API is.
        "test_string_session_ids_remain_literal_and_isolated[]",
    ],
    HITL_TESTS: [
        # OpenAIConversationsSession over a fake OpenAI client: no session of
        # the kind replaced here.
        "test_openai_conversations_session_hitl_scenario",
    ],
}


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """One process at a time (xdist workers share the cache)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _unavailable(reason: str) -> NoReturn:
    unavailable("the OpenAI Agents SDK's own session tests", reason)


def _sdist(version: str, cache: Path) -> Path:
    sdist = cache / f"openai_agents-{version}.tar.gz"
    if sdist.exists():
        return sdist
    download = cache / "download"
    shutil.rmtree(download, ignore_errors=True)
    command = [sys.executable, "-m", "pip", "download", "--no-binary", ":all:", "--no-deps"]
    command += ["--dest", str(download), f"{DISTRIBUTION}=={version}"]
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=DOWNLOAD_TIMEOUT_SECONDS
        )
    except subprocess.TimeoutExpired:
        _unavailable(f"downloading the {DISTRIBUTION} {version} sdist took too long")
    found = list(download.glob("*.tar.gz"))
    if done.returncode != 0 or len(found) != 1:
        _unavailable(
            f"`pip download` of the {DISTRIBUTION} {version} sdist failed: "
            f"{done.stderr.strip().splitlines()[-1:]}"
        )
    found[0].replace(sdist)
    return sdist


@pytest.fixture(scope="session")
def sdk_suite() -> Path:
    """The extracted sdist of the installed SDK version."""
    version = importlib.metadata.version(DISTRIBUTION)
    cache = CACHE / "session-state-openai-agents-sdist"
    with _locked(cache / ".lock"):
        extracted = cache / f"openai_agents-{version}"
        if not (extracted / "tests").is_dir():
            sdist = _sdist(version, cache)
            unpacking = Path(tempfile.mkdtemp(dir=cache))
            with tarfile.open(sdist) as archive:
                archive.extractall(unpacking, filter="data")
            (unpacking / f"openai_agents-{version}").replace(extracted)
            shutil.rmtree(unpacking)
    metadata = (extracted / "PKG-INFO").read_text()
    assert f"\nVersion: {version}\n" in metadata, "the sdist is not of the installed version"
    return extracted


def _run_suite(suite: Path, server: ServerProcess, work: Path) -> tuple[ElementTree.Element, dict]:
    excluded = work / "excluded.json"
    excluded.write_text(json.dumps(EXCLUDED))
    report = work / "report.json"
    results = work / "results.xml"
    env = {name: value for name, value in os.environ.items() if not name.startswith("PYTEST_")}
    env.update(
        PYTHONPATH=os.pathsep.join(filter(None, [str(PLUGIN.parent), env.get("PYTHONPATH")])),
        SESSION_STATE_SDK_SUITE_BASE_URL=server.base_url,
        SESSION_STATE_SDK_SUITE_EXCLUDED=str(excluded),
        SESSION_STATE_SDK_SUITE_REPORT=str(report),
    )
    command = [sys.executable, "-m", "pytest", *SUITE, "-p", PLUGIN.stem]
    command += ["-p", "no:cacheprovider", "-p", "no:xdist", "-q", "-rfE"]
    command += ["--timeout", str(PER_TEST_TIMEOUT_SECONDS), f"--junitxml={results}"]
    done = subprocess.run(
        command, cwd=suite, env=env, capture_output=True, text=True, timeout=SUITE_TIMEOUT_SECONDS
    )
    assert done.returncode in (0, 1), done.stdout[-5000:] + done.stderr[-5000:]
    return ElementTree.parse(results).getroot(), json.loads(report.read_text())


def test_the_sdks_session_tests_pass_on_session_state_session(
    sdk_suite: Path, server: ServerProcess, tmp_path: Path
) -> None:
    results, report = _run_suite(sdk_suite, server, tmp_path)
    cases = results.iter("testcase")
    outcomes: dict[str, str] = {}
    for case in cases:
        name = f"{case.get('classname')}::{case.get('name')}"
        kinds = [child.tag for child in case if child.tag in ("failure", "error", "skipped")]
        outcomes[name] = kinds[0] if kinds else "passed"
    failed = sorted(name for name, outcome in outcomes.items() if outcome in ("failure", "error"))
    passed = [name for name, outcome in outcomes.items() if outcome == "passed"]
    print(
        f"OpenAI Agents SDK session tests on {server.database_url.split(':')[0]}: "
        f"{len(passed)} passed, {len(failed)} failed, "
        f"{len(outcomes) - len(passed) - len(failed)} skipped, "
        f"{len(report['deselected'])} deselected"
    )
    assert failed == [], f"{len(failed)} failed of {len(outcomes)}: {failed}"

    # The list names only tests that exist, and the suite ran on our server:
    # every module made sessions there.
    assert report["unmatched_exclusions"] == []
    for module in SUITE:
        made = sum(count for test, count in report["sessions_made"].items() if module in test)
        assert made > 0, f"no SessionStateSession was made by {module}"
    assert len(passed) >= MIN_PASSED
