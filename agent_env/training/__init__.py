"""Trainers' sides of a served bundle, one module per trainer, each behind its own extra.

`agent_env.training.trl` is TRL's (`pip install 'agentenv-framework[trl]'`). Nothing here is imported
by `import agent_env`.
"""
