"""LangGraph's long-term store (BaseStore) served by this service: items by
namespace and key, filters, namespaces, TTL (routes: app.langgraph.store.routes)."""
