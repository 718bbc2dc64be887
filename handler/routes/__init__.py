"""The API's route groups, each a Powertools `Router` that `handler.app` includes."""
