"""The fences: every place agent_env leans on what a dependency keeps private or leaves undocumented.

One module per dependency (OpenEnv's client and server apart: different layers use them), and no
such reliance anywhere else. Each module puts the reliance behind a name of ours, says in its
docstring what it relies on and why no public way serves, and imports nothing but its dependency,
so each layer imports the fences it needs without the others (the trainer's side imports
`openenv_client` and `threading_exit` without the server); the fences of OpenEnv (`openenv_*`) are
the server's and the trainer's, never the core's. Each has a test, `tst/unit/_private/<module>_test.py`
(and one in tst/integration where it takes a Docker engine), named as the behaviour it still expects
of the dependency (`test_threading_still_has_register_atexit`), so an upgrade that changes it fails
by that name.
"""
