"""The client's side of a served bundle, which the trainer's side (`agent_env.training.trl`) and eval
(`agent_env.eval`) both stand on: the session client and the event loop it runs on (`session`, `loop`),
the Task API reader (`taskapi`), each call's deadline (`deadlines`), one episode as a client plays it
(`episode`), `end_turn` and the tools as a model is shown them (`tools`, `signatures`), what goes wrong
(`errors`), and the wire contract and bearer token both sides share (`wire`, `tokens`: the server imports
them too, as `agent_env.openenv.wire` and `agent_env.openenv.tokens`).

It imports neither TRL nor agent_env's server (`agent_env.openenv`), nor the trainer's side, eval or the
command line; its session and wire types are OpenEnv's client and types. Import its modules: this package
exports nothing.
"""
