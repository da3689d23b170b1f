"""deploy/kubernetes: valid against the API's schemas, and agreeing with the image and the server's code."""

from __future__ import annotations

import ast
import copy
from typing import Any
from urllib.parse import urlsplit

import kubernetes_validate
import pytest

from agent_env._errors import ArgumentError
from agent_env._origins import ALLOWED_HOSTS_VARIABLE, AllowedHosts
from agent_env._server_options import CAPACITY_VARIABLE
from agent_env._trajectory_recorder import _CLOSE_WAIT_S
from agent_env.openenv._serve import GRACEFUL_SHUTDOWN_S, serve
from agent_env.openenv._tokens import TOKEN_VARIABLE, resolve_token
from agent_env.openenv._tracker import TEARDOWN_TIMEOUT_S
from agent_env.sandbox import KILL_MARGIN_S
from tst.unit.deploy._deploy import (
    INIT,
    KUBERNETES,
    KUBERNETES_VERSION,
    container,
    instruction,
    manifests,
    port_of,
)

pytestmark = pytest.mark.needs("dev_installed", "openenv_installed")

PROBES = ("startupProbe", "readinessProbe", "livenessProbe")


def validate(resource: dict[str, Any]) -> None:
    kubernetes_validate.validate(resource, KUBERNETES_VERSION, strict=True)


def test_every_manifest_is_valid_against_the_kubernetes_schemas_with_no_network():
    resources = manifests()

    for resource in resources.values():
        validate(resource)
    assert sorted(resources) == ["Deployment", "Secret", "Service"]


@pytest.mark.parametrize(
    ("field", "value"),
    [("replicas", "three"), ("terminationGracePeriod", 180)],
    ids=["a mistyped field", "a misspelt field"],
)
def test_the_validator_rejects_a_deployment_with_a_mistyped_or_misspelt_field(field: str, value: Any):
    broken = copy.deepcopy(manifests()["Deployment"])
    broken["spec"][field] = value

    with pytest.raises(kubernetes_validate.ValidationError):
        validate(broken)


def test_the_service_is_headless_and_selects_the_deployments_pods():
    resources = manifests()
    service, deployment = resources["Service"]["spec"], resources["Deployment"]["spec"]

    assert service["clusterIP"] == "None"
    assert service["selector"].items() <= deployment["template"]["metadata"]["labels"].items()
    assert deployment["selector"]["matchLabels"] == service["selector"]


def test_every_port_the_manifests_name_is_the_one_the_image_serves_on():
    serve = instruction("ENTRYPOINT").value
    image_port = int(serve[serve.index("--port") + 1])
    healthcheck_url = instruction("HEALTHCHECK").value[-1]
    ours = container()
    (port,) = ours["ports"]
    (service_port,) = manifests()["Service"]["spec"]["ports"]

    assert instruction("EXPOSE").value == (str(image_port),)
    assert port_of(healthcheck_url) == image_port
    assert port["containerPort"] == image_port
    # A headless Service maps no port: clients reach the pod's own.
    assert service_port["port"] == image_port
    assert service_port["targetPort"] in (port["name"], image_port)
    assert {port_of(ours[probe]["exec"]["command"][-1]) for probe in PROBES} == {image_port}


def test_the_probes_run_the_images_health_check_which_sends_the_token_a_server_requires_on_health():
    image_check = list(instruction("HEALTHCHECK").value)
    ours = container()

    assert image_check[0] == "CMD"
    for probe in PROBES:
        command = ours[probe]["exec"]["command"]
        assert command == image_check[1:]
        assert urlsplit(command[-1]).path == "/health"


def test_the_grace_period_covers_the_longest_drain_the_servers_code_allows():
    drain_s = GRACEFUL_SHUTDOWN_S + TEARDOWN_TIMEOUT_S + KILL_MARGIN_S + 2 * _CLOSE_WAIT_S
    pod = manifests()["Deployment"]["spec"]["template"]["spec"]

    assert pod["terminationGracePeriodSeconds"] >= drain_s


def test_the_token_and_the_capacity_reach_the_server_through_the_variables_it_reads():
    env = {variable["name"]: variable for variable in container()["env"]}
    secret = manifests()["Secret"]

    assert int(env[CAPACITY_VARIABLE]["value"]) > 0
    reference = env[TOKEN_VARIABLE]["valueFrom"]["secretKeyRef"]
    assert reference["name"] == secret["metadata"]["name"]
    assert reference["key"] in secret["stringData"]


def test_the_image_serves_off_loopback_so_it_starts_only_with_the_token_the_deployment_gives_it():
    command = list(instruction("ENTRYPOINT").value[len(INIT) :])
    host = command[command.index("--host") + 1]
    env = {variable["name"] for variable in container()["env"]}

    with pytest.raises(ArgumentError, match=f"refusing to serve on {host} without a token.*{TOKEN_VARIABLE}"):
        serve("/bundle", host=host)  # refused before the bundle is read
    assert TOKEN_VARIABLE in env
    assert "--insecure-no-token" not in [*command, *container().get("args", [])]


def test_the_server_answers_requests_that_name_the_service_and_those_that_name_a_pod_by_its_address():
    env = {variable["name"]: variable for variable in container()["env"]}
    service = manifests()["Service"]["metadata"]["name"]
    allowed = AllowedHosts.of(env[ALLOWED_HOSTS_VARIABLE]["value"].split(","))

    for host in (service, f"{service}.default.svc.cluster.local", "10.244.1.7"):
        assert allowed.refusal([f"{host}:8000"], []) is None, host
    assert allowed.refusal(["evil.example:8000"], []) is not None


def test_the_secrets_placeholder_is_refused_by_the_server_so_none_serves_with_a_published_token():
    (placeholder,) = manifests()["Secret"]["stringData"].values()

    with pytest.raises(ValueError, match="printable ASCII without spaces"):
        resolve_token(placeholder)


def test_the_pods_run_as_the_images_numeric_non_root_user_on_a_read_only_root():
    user, _, group = instruction("USER").value[0].partition(":")
    pod = manifests()["Deployment"]["spec"]["template"]["spec"]["securityContext"]
    confined = container()["securityContext"]

    assert pod["runAsNonRoot"] is True
    assert (pod["runAsUser"], pod["runAsGroup"]) == (int(user), int(group))
    assert confined["readOnlyRootFilesystem"] is True
    assert confined["allowPrivilegeEscalation"] is False
    assert "/tmp" in {mount["mountPath"] for mount in container()["volumeMounts"]}


def test_the_trainer_snippet_reaches_every_pod_through_the_services_cluster_name_by_dns():
    tree = ast.parse((KUBERNETES / "trainer.py").read_text(encoding="utf-8"))
    constants = {
        node.targets[0].id: node.value.value
        for node in tree.body
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name)
        if isinstance(node.value, ast.Constant)
    }
    (call,) = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "AgentEnv"
    ]
    service = manifests()["Service"]
    (service_port,) = service["spec"]["ports"]

    assert isinstance(call.args[0], ast.Name)
    url = urlsplit(constants[call.args[0].id])
    assert {k.arg: ast.literal_eval(k.value) for k in call.keywords} == {"discover": "dns"}
    assert url.hostname == f"{service['metadata']['name']}.default.svc.cluster.local"
    assert url.port == service_port["port"]
