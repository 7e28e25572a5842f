"""LangGraph served by this service: checkpoints (threads) and the long-term store."""
