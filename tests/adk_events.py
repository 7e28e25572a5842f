"""ADK events that use every kind of thing an event can hold, for the tests
of the shape events are stored in (tests/test_adk_event_shape.py,
tests/client/test_import_adk.py)."""

from typing import Any

from fastapi.openapi.models import OAuth2, OAuthFlowAuthorizationCode, OAuthFlows
from google.adk.auth.auth_credential import AuthCredential, AuthCredentialTypes, OAuth2Auth
from google.adk.auth.auth_tool import AuthConfig
from google.adk.events import Event, EventActions
from google.adk.events.event_actions import EventCompaction
from google.adk.events.ui_widget import UiWidget
from google.adk.models.cache_metadata import CacheMetadata
from google.adk.tools.tool_confirmation import ToolConfirmation
from google.genai import types


def action_samples() -> dict[str, Any]:
    """A value for every field of ADK's EventActions this suite knows, by
    field name, each set so that the round trip tests see it (snake_case keys
    in free-form values, nested models). A field ADK adds is missing here,
    and the tests generated from EventActions.model_fields fail on it until
    it gets a value and the service's rules (rewind, compacted reads, state)
    have been checked against it."""
    actions = rich_events()[1].actions
    compaction = EventCompaction(
        start_timestamp=1.0,
        end_timestamp=2.0,
        compacted_content=types.Content(role="model", parts=[types.Part(text="sum")]),
    )
    return {
        "skip_summarization": True,
        "state_delta": {"trip_plan": {"day_one": "fly"}, "user:last_city": "Oslo"},
        "artifact_delta": {"report_v1.pdf": 1},
        "transfer_to_agent": "booker",
        "transfer_reason": "the user asked to book",
        "escalate": True,
        "requested_auth_configs": actions.requested_auth_configs,
        "requested_tool_confirmations": actions.requested_tool_confirmations,
        "compaction": compaction,
        "end_of_agent": True,
        "agent_state": {"step_index": 2, "nested_obj": {"a_b": 1}},
        "rewind_before_invocation_id": "inv-0",
        "route": ["billing", 2, True],
        "render_ui_widgets": actions.render_ui_widgets,
        "set_model_response": {"answer_value": 42, "items": [1, "two"]},
    }


def rich_events() -> list[Event]:
    """Events using every kind of thing the table describes: nested models,
    lists of them, objects of them, free-form objects with snake_case keys,
    bytes, explicit aliases, extra keys of models that keep them."""
    text = types.Part(text="hello ☀", thought_signature=b"\x00\xffsig")
    call = types.Part(
        function_call=types.FunctionCall(
            id="call-1", name="book_trip", args={"from_city": "Oslo", "seat_map": {"row_1": [1]}}
        )
    )
    answer = types.Part(
        function_response=types.FunctionResponse(
            id="call-1", name="book_trip", response={"booking_id": "b-1", "total_cost": 12.5}
        )
    )
    blob = types.Part(inline_data=types.Blob(mime_type="image/png", data=b"\x89PNG\r\n"))
    code = types.Part(executable_code=types.ExecutableCode(code="print(1)", language="PYTHON"))
    result = types.Part(
        code_execution_result=types.CodeExecutionResult(outcome="OUTCOME_OK", output="1")
    )
    file = types.Part(file_data=types.FileData(file_uri="gs://b/f.pdf", mime_type="text/plain"))
    grounding = types.GroundingMetadata(
        web_search_queries=["weather oslo"],
        grounding_chunks=[
            types.GroundingChunk(web=types.GroundingChunkWeb(uri="https://x", title="X")),
            types.GroundingChunk(
                retrieved_context=types.GroundingChunkRetrievedContext(
                    uri="gs://c",
                    rag_chunk=types.RagChunk(
                        text="chunk", page_span=types.RagChunkPageSpan(first_page=1, last_page=2)
                    ),
                    custom_metadata=[
                        types.GroundingChunkCustomMetadata(key="k", string_value="v"),
                    ],
                )
            ),
        ],
        grounding_supports=[
            types.GroundingSupport(
                grounding_chunk_indices=[0],
                confidence_scores=[0.9],
                segment=types.Segment(start_index=0, end_index=5, text="hello"),
            )
        ],
        search_entry_point=types.SearchEntryPoint(rendered_content="<div/>"),
    )
    usage = types.GenerateContentResponseUsageMetadata(
        prompt_token_count=10,
        candidates_token_count=3,
        total_token_count=13,
        prompt_tokens_details=[types.ModalityTokenCount(modality="TEXT", token_count=10)],
    )
    auth = AuthConfig(
        auth_scheme=OAuth2(
            flows=OAuthFlows(
                authorizationCode=OAuthFlowAuthorizationCode(
                    authorizationUrl="https://auth/a",
                    tokenUrl="https://auth/t",
                    scopes={"calendar_read": "read", "https://x/y_z": "url scope"},
                )
            )
        ),
        raw_auth_credential=AuthCredential(
            auth_type=AuthCredentialTypes.OAUTH2,
            oauth2=OAuth2Auth(client_id="id", client_secret="secret", auth_uri="https://a"),
        ),
        credential_key="key_1",
    )
    return [
        Event(author="user", invocation_id="inv-1"),
        Event(
            author="planner",
            invocation_id="inv-1",
            branch="root.planner",
            content=types.Content(role="model", parts=[text, call, blob, code, result, file]),
            grounding_metadata=grounding,
            usage_metadata=usage,
            citation_metadata=types.CitationMetadata(
                citations=[
                    types.Citation(
                        start_index=0,
                        end_index=3,
                        uri="https://c",
                        publication_date=types.GoogleTypeDate(year=2024, month=1, day=2),
                    )
                ]
            ),
            cache_metadata=CacheMetadata(
                cache_name="projects/p/cachedContents/c",
                expire_time=2e9,
                fingerprint="f",
                invocations_used=1,
                contents_count=2,
                created_at=1.7e9,
            ),
            input_transcription=types.Transcription(text="hi", finished=True),
            custom_metadata={"trace_id": "t-1", "nested_obj": {"a_b": 1}},
            long_running_tool_ids={"call-1"},
            turn_complete=True,
            finish_reason=types.FinishReason.STOP,
            actions=EventActions(
                state_delta={"user:last_city": "Oslo", "trip_plan": {"day_one": "fly"}},
                artifact_delta={"report_v1.pdf": 1},
                transfer_to_agent="booker",
                skip_summarization=True,
                requested_auth_configs={"call_1": auth},
                requested_tool_confirmations={
                    "call_2": ToolConfirmation(hint="ok?", payload={"max_price": 100})
                },
                agent_state={"step_index": 2},
                render_ui_widgets=[
                    UiWidget(id="w", provider="mcp", payload={"resource_uri": "ui://x"})
                ],
            ),
        ),
        Event(
            author="user",
            invocation_id="inv-2",
            content=types.Content(role="user", parts=[answer]),
            actions=EventActions(
                compaction=EventCompaction(
                    start_timestamp=1.0,
                    end_timestamp=2.0,
                    compacted_content=types.Content(role="model", parts=[types.Part(text="sum")]),
                )
            ),
        ),
    ]
