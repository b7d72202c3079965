"""The real engines' loaders run in their own interpreters on synthetic checkpoints, recorded and compared."""
