"""Long-term memory: ADK's memory service, embedders, search by meaning and by
keyword, and their storage on both backends."""
