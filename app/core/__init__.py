"""The foundation every feature and layer builds on: settings, errors, identifiers,
JSON rules, limits, metrics and logs. It imports nothing of the service outside it."""
