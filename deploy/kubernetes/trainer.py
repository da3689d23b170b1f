"""The trainer's side of deploy/kubernetes: GRPO over every agent-env pod the headless Service names.

Run it in a pod of the same cluster, with `AGENTENV_TOKEN` from the `agent-env-token` Secret, the
package installed with its `trl` extra, and TRL and torch as the trainer pins them. `discover="dns"`
resolves the Service's name to every ready pod and again when one is lost, so sessions spread over
the servers by their room and a pod that drains or dies costs only its episodes' rewards.
"""

from __future__ import annotations

from trl import GRPOConfig, GRPOTrainer

from agent_env.training.trl import AgentEnv

SERVERS = "http://agent-env.default.svc.cluster.local:8000"
MODEL = "Qwen/Qwen3-4B"


def main() -> None:
    with AgentEnv(SERVERS, discover="dns") as env:  # the token: AGENTENV_TOKEN
        trainer = GRPOTrainer(
            model=MODEL,
            args=GRPOConfig(output_dir="runs/grpo", max_tool_calling_iterations=12),
            train_dataset=env.dataset,
            environment_factory=env.factory,
        )
        trainer.train()


if __name__ == "__main__":
    main()
