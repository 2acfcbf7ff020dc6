"""The results database: models, schema migrations, the key, the repository (the one writer), sharing."""
