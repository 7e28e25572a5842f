"""The web inspector at /ui: a static page and its ES modules, which call
only the public REST API from the browser (docs/inspector.md)."""
