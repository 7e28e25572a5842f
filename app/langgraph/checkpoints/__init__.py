"""LangGraph's checkpoints served by this service: threads, checkpoints with
parent links and metadata, channel values stored once per version, pending
writes per task (`session_state_client.langgraph.SessionStateSaver` is the
client)."""
