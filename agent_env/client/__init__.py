"""The client's side of a served bundle, which the trainer's side (`agent_env.training.trl`) and eval
(`agent_env.eval`) both stand on: the session client and the event loop it runs on (`session`, `loop`),
the Task API reader (`taskapi`), each call's deadline (`deadlines`), `end_turn` and the tools as a
model is shown them (`tools`, `signatures`), and what goes wrong (`errors`).

It imports neither TRL nor agent_env's server (`agent_env.openenv`), nor the trainer's side, eval or the
command line; its session speaks through OpenEnv's client. Import its modules: this package exports nothing.
"""
