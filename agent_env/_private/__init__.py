"""The fences: every place agent_env leans on what a dependency keeps private or leaves undocumented.

One module per dependency, and no such reliance anywhere else. Each module puts the reliance behind
a name of ours, says in its docstring what it relies on and why no public way serves, and imports
nothing but its dependency, so each layer imports the fences it needs without the others (the
trainer's side imports `openenv_client` and `threading_exit` without the server). Each has a test,
`tst/unit/_private/<module>_test.py`, named as the behaviour it still expects of the dependency
(`test_threading_still_has_register_atexit`), so an upgrade that changes it fails by that name.
"""
