"""ADK's event models: the keys ADK stores under their field names and
sends under their JSON names (`by_alias`), and the values that hold models
in turn. Written by `python -m tests.adk_event_fields_generator` from
google-adk 2.15.0; do not edit (tests/test_adk_event_shape.py
fails when the installed ADK gives another table).

MODELS[model][field name] = (JSON name, what the value holds: None, kept
as it is; "Model", that model or a list of them; "{Model}", an object
whose keys are kept and whose values are that model). Keys a model has
not listed are kept as they are. The event is "Event"."""

MODELS: dict[str, dict[str, tuple[str, str | None]]] = {
    "Event": {
        "model_version": ("modelVersion", None),
        "content": ("content", "Content"),
        "grounding_metadata": ("groundingMetadata", "GroundingMetadata"),
        "turn_complete": ("turnComplete", None),
        "turn_complete_reason": ("turnCompleteReason", None),
        "interaction_status": ("interactionStatus", None),
        "finish_reason": ("finishReason", None),
        "error_code": ("errorCode", None),
        "error_message": ("errorMessage", None),
        "custom_metadata": ("customMetadata", None),
        "usage_metadata": ("usageMetadata", "GenerateContentResponseUsageMetadata"),
        "cache_creation_token_count": ("cacheCreationTokenCount", None),
        "live_session_resumption_update": (
            "liveSessionResumptionUpdate",
            "LiveServerSessionResumptionUpdate",
        ),
        "live_session_id": ("liveSessionId", None),
        "go_away": ("goAway", "LiveServerGoAway"),
        "voice_activity": ("voiceActivity", "VoiceActivity"),
        "input_transcription": ("inputTranscription", "Transcription"),
        "output_transcription": ("outputTranscription", "Transcription"),
        "avg_logprobs": ("avgLogprobs", None),
        "logprobs_result": ("logprobsResult", "LogprobsResult"),
        "cache_metadata": ("cacheMetadata", None),
        "citation_metadata": ("citationMetadata", "CitationMetadata"),
        "interaction_id": ("interactionId", None),
        "environment_id": ("environmentId", None),
        "invocation_id": ("invocationId", None),
        "actions": ("actions", "EventActions"),
        "node_info": ("nodeInfo", "NodeInfo"),
        "long_running_tool_ids": ("longRunningToolIds", None),
        "isolation_scope": ("isolationScope", None),
    },
    "Content": {
        "parts": ("parts", "Part"),
    },
    "Part": {
        "media_resolution": ("mediaResolution", "PartMediaResolution"),
        "code_execution_result": ("codeExecutionResult", None),
        "executable_code": ("executableCode", None),
        "file_data": ("fileData", "FileData"),
        "function_call": ("functionCall", "FunctionCall"),
        "function_response": ("functionResponse", "FunctionResponse"),
        "inline_data": ("inlineData", "Blob"),
        "thought_signature": ("thoughtSignature", None),
        "video_metadata": ("videoMetadata", "VideoMetadata"),
        "tool_call": ("toolCall", "ToolCall"),
        "tool_response": ("toolResponse", "ToolResponse"),
        "part_metadata": ("partMetadata", None),
        "audio_transcription": ("audioTranscription", "Transcription"),
        "media_processing": ("mediaProcessing", None),
        "speech_metadata": ("speechMetadata", None),
    },
    "PartMediaResolution": {
        "num_tokens": ("numTokens", None),
    },
    "FileData": {
        "display_name": ("displayName", None),
        "file_uri": ("fileUri", None),
        "mime_type": ("mimeType", None),
    },
    "FunctionCall": {
        "partial_args": ("partialArgs", "PartialArg"),
        "will_continue": ("willContinue", None),
    },
    "PartialArg": {
        "bool_value": ("boolValue", None),
        "json_path": ("jsonPath", None),
        "null_value": ("nullValue", None),
        "number_value": ("numberValue", None),
        "string_value": ("stringValue", None),
        "will_continue": ("willContinue", None),
    },
    "FunctionResponse": {
        "will_continue": ("willContinue", None),
        "parts": ("parts", "FunctionResponsePart"),
    },
    "FunctionResponsePart": {
        "inline_data": ("inlineData", "FunctionResponseBlob"),
        "file_data": ("fileData", "FunctionResponseFileData"),
        "media_processing": ("mediaProcessing", None),
    },
    "FunctionResponseBlob": {
        "mime_type": ("mimeType", None),
        "display_name": ("displayName", None),
    },
    "FunctionResponseFileData": {
        "file_uri": ("fileUri", None),
        "mime_type": ("mimeType", None),
        "display_name": ("displayName", None),
    },
    "Blob": {
        "display_name": ("displayName", None),
        "mime_type": ("mimeType", None),
    },
    "VideoMetadata": {
        "end_offset": ("endOffset", None),
        "start_offset": ("startOffset", None),
    },
    "ToolCall": {
        "tool_type": ("toolType", None),
    },
    "ToolResponse": {
        "tool_type": ("toolType", None),
    },
    "Transcription": {
        "language_code": ("languageCode", None),
        "speaker_label": ("speakerLabel", None),
        "words": ("words", "WordInfo"),
        "start_offset": ("startOffset", None),
        "end_offset": ("endOffset", None),
    },
    "WordInfo": {
        "start_offset": ("startOffset", None),
        "end_offset": ("endOffset", None),
    },
    "GroundingMetadata": {
        "image_search_queries": ("imageSearchQueries", None),
        "grounding_chunks": ("groundingChunks", "GroundingChunk"),
        "grounding_supports": ("groundingSupports", "GroundingSupport"),
        "retrieval_metadata": ("retrievalMetadata", "RetrievalMetadata"),
        "search_entry_point": ("searchEntryPoint", "SearchEntryPoint"),
        "web_search_queries": ("webSearchQueries", None),
        "google_maps_widget_context_token": ("googleMapsWidgetContextToken", None),
        "retrieval_queries": ("retrievalQueries", None),
        "source_flagging_uris": ("sourceFlaggingUris", "GroundingMetadataSourceFlaggingUri"),
    },
    "GroundingChunk": {
        "image": ("image", "GroundingChunkImage"),
        "maps": ("maps", "GroundingChunkMaps"),
        "retrieved_context": ("retrievedContext", "GroundingChunkRetrievedContext"),
    },
    "GroundingChunkImage": {
        "source_uri": ("sourceUri", None),
        "image_uri": ("imageUri", None),
    },
    "GroundingChunkMaps": {
        "place_answer_sources": ("placeAnswerSources", "GroundingChunkMapsPlaceAnswerSources"),
        "place_id": ("placeId", None),
        "route": ("route", "GroundingChunkMapsRoute"),
    },
    "GroundingChunkMapsPlaceAnswerSources": {
        "review_snippet": ("reviewSnippet", "GroundingChunkMapsPlaceAnswerSourcesReviewSnippet"),
        "flag_content_uri": ("flagContentUri", None),
        "review_snippets": ("reviewSnippets", "GroundingChunkMapsPlaceAnswerSourcesReviewSnippet"),
    },
    "GroundingChunkMapsPlaceAnswerSourcesReviewSnippet": {
        "author_attribution": (
            "authorAttribution",
            "GroundingChunkMapsPlaceAnswerSourcesAuthorAttribution",
        ),
        "flag_content_uri": ("flagContentUri", None),
        "google_maps_uri": ("googleMapsUri", None),
        "relative_publish_time_description": ("relativePublishTimeDescription", None),
        "review_id": ("reviewId", None),
    },
    "GroundingChunkMapsPlaceAnswerSourcesAuthorAttribution": {
        "display_name": ("displayName", None),
        "photo_uri": ("photoUri", None),
    },
    "GroundingChunkMapsRoute": {
        "distance_meters": ("distanceMeters", None),
        "encoded_polyline": ("encodedPolyline", None),
    },
    "GroundingChunkRetrievedContext": {
        "document_name": ("documentName", None),
        "rag_chunk": ("ragChunk", "RagChunk"),
        "custom_metadata": ("customMetadata", "GroundingChunkCustomMetadata"),
        "file_search_store": ("fileSearchStore", None),
        "page_number": ("pageNumber", None),
        "media_id": ("mediaId", None),
    },
    "RagChunk": {
        "page_span": ("pageSpan", "RagChunkPageSpan"),
        "chunk_id": ("chunkId", None),
        "file_id": ("fileId", None),
    },
    "RagChunkPageSpan": {
        "first_page": ("firstPage", None),
        "last_page": ("lastPage", None),
    },
    "GroundingChunkCustomMetadata": {
        "numeric_value": ("numericValue", None),
        "string_list_value": ("stringListValue", None),
        "string_value": ("stringValue", None),
    },
    "GroundingSupport": {
        "confidence_scores": ("confidenceScores", None),
        "grounding_chunk_indices": ("groundingChunkIndices", None),
        "segment": ("segment", "Segment"),
        "rendered_parts": ("renderedParts", None),
    },
    "Segment": {
        "start_index": ("startIndex", None),
        "end_index": ("endIndex", None),
        "part_index": ("partIndex", None),
    },
    "RetrievalMetadata": {
        "google_search_dynamic_retrieval_score": ("googleSearchDynamicRetrievalScore", None),
    },
    "SearchEntryPoint": {
        "rendered_content": ("renderedContent", None),
        "sdk_blob": ("sdkBlob", None),
    },
    "GroundingMetadataSourceFlaggingUri": {
        "flag_content_uri": ("flagContentUri", None),
        "source_id": ("sourceId", None),
    },
    "GenerateContentResponseUsageMetadata": {
        "cache_tokens_details": ("cacheTokensDetails", "ModalityTokenCount"),
        "cached_content_token_count": ("cachedContentTokenCount", None),
        "candidates_token_count": ("candidatesTokenCount", None),
        "candidates_tokens_details": ("candidatesTokensDetails", "ModalityTokenCount"),
        "prompt_token_count": ("promptTokenCount", None),
        "prompt_tokens_details": ("promptTokensDetails", "ModalityTokenCount"),
        "thoughts_token_count": ("thoughtsTokenCount", None),
        "tool_use_prompt_token_count": ("toolUsePromptTokenCount", None),
        "tool_use_prompt_tokens_details": ("toolUsePromptTokensDetails", "ModalityTokenCount"),
        "total_token_count": ("totalTokenCount", None),
        "traffic_type": ("trafficType", None),
    },
    "ModalityTokenCount": {
        "token_count": ("tokenCount", None),
    },
    "LiveServerSessionResumptionUpdate": {
        "new_handle": ("newHandle", None),
        "last_consumed_client_message_index": ("lastConsumedClientMessageIndex", None),
    },
    "LiveServerGoAway": {
        "time_left": ("timeLeft", None),
    },
    "VoiceActivity": {
        "voice_activity_type": ("voiceActivityType", None),
        "audio_offset": ("audioOffset", None),
    },
    "LogprobsResult": {
        "chosen_candidates": ("chosenCandidates", "LogprobsResultCandidate"),
        "top_candidates": ("topCandidates", "LogprobsResultTopCandidates"),
        "log_probability_sum": ("logProbabilitySum", None),
    },
    "LogprobsResultCandidate": {
        "log_probability": ("logProbability", None),
        "token_id": ("tokenId", None),
    },
    "LogprobsResultTopCandidates": {
        "candidates": ("candidates", "LogprobsResultCandidate"),
    },
    "CitationMetadata": {
        "citations": ("citations", "Citation"),
    },
    "Citation": {
        "end_index": ("endIndex", None),
        "publication_date": ("publicationDate", None),
        "start_index": ("startIndex", None),
    },
    "EventActions": {
        "skip_summarization": ("skipSummarization", None),
        "state_delta": ("stateDelta", None),
        "artifact_delta": ("artifactDelta", None),
        "transfer_to_agent": ("transferToAgent", None),
        "transfer_reason": ("transferReason", None),
        "requested_auth_configs": ("requestedAuthConfigs", "{AuthConfig}"),
        "requested_tool_confirmations": ("requestedToolConfirmations", None),
        "compaction": ("compaction", "EventCompaction"),
        "end_of_agent": ("endOfAgent", None),
        "agent_state": ("agentState", None),
        "rewind_before_invocation_id": ("rewindBeforeInvocationId", None),
        "render_ui_widgets": ("renderUiWidgets", None),
        "set_model_response": ("setModelResponse", None),
    },
    "AuthConfig": {
        "auth_scheme": ("authScheme", "AuthConfig.auth_scheme"),
        "raw_auth_credential": ("rawAuthCredential", "AuthCredential"),
        "exchanged_auth_credential": ("exchangedAuthCredential", "AuthCredential"),
        "credential_key": ("credentialKey", None),
    },
    "AuthConfig.auth_scheme": {
        "type_": ("type", None),
        "in_": ("in", None),
    },
    "AuthCredential": {
        "auth_type": ("authType", None),
        "resource_ref": ("resourceRef", None),
        "api_key": ("apiKey", None),
        "http": ("http", "HttpAuth"),
        "service_account": ("serviceAccount", "ServiceAccount"),
        "oauth2": ("oauth2", "OAuth2Auth"),
    },
    "HttpAuth": {
        "additional_headers": ("additionalHeaders", None),
    },
    "ServiceAccount": {
        "service_account_credential": ("serviceAccountCredential", "ServiceAccountCredential"),
        "use_default_credential": ("useDefaultCredential", None),
        "use_id_token": ("useIdToken", None),
    },
    "ServiceAccountCredential": {
        "type_": ("type", None),
        "project_id": ("projectId", None),
        "private_key_id": ("privateKeyId", None),
        "private_key": ("privateKey", None),
        "client_email": ("clientEmail", None),
        "client_id": ("clientId", None),
        "auth_uri": ("authUri", None),
        "token_uri": ("tokenUri", None),
        "auth_provider_x509_cert_url": ("authProviderX509CertUrl", None),
        "client_x509_cert_url": ("clientX509CertUrl", None),
        "universe_domain": ("universeDomain", None),
    },
    "OAuth2Auth": {
        "client_id": ("clientId", None),
        "client_secret": ("clientSecret", None),
        "auth_uri": ("authUri", None),
        "redirect_uri": ("redirectUri", None),
        "auth_response_uri": ("authResponseUri", None),
        "auth_code": ("authCode", None),
        "access_token": ("accessToken", None),
        "refresh_token": ("refreshToken", None),
        "id_token": ("idToken", None),
        "expires_at": ("expiresAt", None),
        "expires_in": ("expiresIn", None),
        "code_verifier": ("codeVerifier", None),
        "code_challenge_method": ("codeChallengeMethod", None),
        "token_endpoint_auth_method": ("tokenEndpointAuthMethod", None),
    },
    "EventCompaction": {
        "start_timestamp": ("startTimestamp", None),
        "end_timestamp": ("endTimestamp", None),
        "compacted_content": ("compactedContent", "Content"),
    },
    "NodeInfo": {
        "output_for": ("outputFor", None),
        "message_as_output": ("messageAsOutput", None),
    },
}
