"""The server's Task API over HTTP: which environment it serves, its splits, each split's tasks and
their reference plays."""

from __future__ import annotations

from typing import Any

import httpx
from pydantic import TypeAdapter

from agent_env._specs import CurriculumDraw, CurriculumDrawn, CurriculumScore, SolutionSpec, TaskSpec
from agent_env.client._errors import CurriculumError, ServerUnavailableError, UnknownSplitError
from agent_env.client._tokens import TOKEN_VARIABLE, bearer

_TASKS: TypeAdapter[list[TaskSpec]] = TypeAdapter(list[TaskSpec])
_SOLUTIONS: TypeAdapter[list[SolutionSpec]] = TypeAdapter(list[SolutionSpec])
_START_ONE = "start one with `agent-env serve BUNDLE --port 8000`, or use AgentEnv.local(BUNDLE)"


class TaskAPI:
    """The Task API of the agent_env server at `url`; checks at once that one answers there."""

    def __init__(self, url: str, *, token: str | None = None, timeout_s: float = 30.0) -> None:
        self.url = url.rstrip("/")
        self._http = httpx.Client(
            base_url=self.url, timeout=timeout_s, trust_env=False, headers=bearer(token)
        )
        try:
            names = self._get("/list_environments")
            if not isinstance(names, list) or not names:
                raise ServerUnavailableError(f"the server at {self.url} serves no OpenEnv environment")
            self.env_name = str(names[0])
            status = self._get(f"/{self.env_name}/status", what=f"environment '{self.env_name}'")
            self.max_concurrent_envs = int(status["max_concurrent_envs"])
            self.fingerprint: str | None = status.get("tasks_fingerprint")
            """What tasks it serves (`agent_env.tasks_fingerprint`); None from an older server."""
        except BaseException:
            self._http.close()
            raise

    def splits(self) -> list[str]:
        return [str(split["name"]) for split in self._get(f"/{self.env_name}/splits")]

    def tasks(self, split: str) -> list[TaskSpec]:
        response = self._request("POST", f"/{self.env_name}/tasks", json={"split": split})
        if response.status_code == httpx.codes.NOT_FOUND:
            raise UnknownSplitError(f"{_detail(response)}: pass one of those as split=")
        return _TASKS.validate_python(_ok(response).json()["tasks"])

    def solutions(self, split: str) -> list[SolutionSpec]:
        """The reference plays of the split's tasks that have one (ask `tasks(split)` first: an unknown
        split is its error)."""
        path = f"/{self.env_name}/solutions"
        response = self._request("POST", path, json={"split": split})
        if response.status_code == httpx.codes.NOT_FOUND:
            raise ServerUnavailableError(
                f"the server at {self.url} does not list reference plays (POST {path}: 404: "
                f"{_detail(response)}): serve the bundle with this version of agent_env"
            )
        return _SOLUTIONS.validate_python(_ok(response).json()["solutions"])

    def curriculum_draw(self, request: CurriculumDraw) -> CurriculumDrawn:
        """The task the server's online curriculum draws for a GRPO group (the same for each asking
        with the group's key)."""
        path = f"/{self.env_name}/curriculum/draw"
        answer = self._curriculum("POST", path, json=request.model_dump())
        return CurriculumDrawn.model_validate(answer)

    def curriculum_score(self, request: CurriculumScore) -> None:
        """Tell the run's curriculum one rollout's score."""
        self._curriculum("POST", f"/{self.env_name}/curriculum/scores", json=request.model_dump())

    def curriculum_state(self, run: str) -> dict[str, Any]:
        """The run's curricula, as a checkpoint keeps them."""
        state: dict[str, Any] = self._curriculum("GET", f"/{self.env_name}/curriculum/{run}")
        return state

    def curriculum_restore(self, run: str, state: dict[str, Any]) -> None:
        """Set the run's curricula to a saved state."""
        self._curriculum("PUT", f"/{self.env_name}/curriculum/{run}", json=state)

    def close(self) -> None:
        self._http.close()

    def _curriculum(self, method: str, path: str, **options: Any) -> Any:
        response = self._request(method, path, **options)
        if response.status_code == httpx.codes.NOT_FOUND and _detail(response) == "Not Found":
            raise ServerUnavailableError(
                f"the server at {self.url} holds no online curriculum ({method} {path}: 404): serve the "
                "bundle with this version of agent_env"
            )
        if response.status_code in (
            httpx.codes.NOT_FOUND,
            httpx.codes.CONFLICT,
            httpx.codes.UNPROCESSABLE_ENTITY,
        ):
            raise CurriculumError(f"the server's curriculum refused {method} {path}: {_detail(response)}")
        return _ok(response).json()

    def _get(self, path: str, *, what: str = "") -> Any:
        response = self._request("GET", path)
        if response.status_code == httpx.codes.NOT_FOUND:
            raise ServerUnavailableError(
                f"the server at {self.url} is not an agent_env server (GET {path}: 404"
                + (f", for {what}" if what else "")
                + f"): {_START_ONE}"
            )
        return _ok(response).json()

    def _request(self, method: str, path: str, **options: Any) -> httpx.Response:
        try:
            return self._http.request(method, path, **options)
        except httpx.HTTPError as exc:
            raise ServerUnavailableError(
                f"no agent_env server answers at {self.url} ({type(exc).__name__}: {exc}): {_START_ONE}"
            ) from None


def _ok(response: httpx.Response) -> httpx.Response:
    if response.status_code == httpx.codes.UNAUTHORIZED:
        sent = "authorization" in response.request.headers
        raise ServerUnavailableError(
            f"the server at {response.request.url.copy_with(path='/')} "
            + ("refused the bearer token: check it" if sent else "requires a bearer token")
            + f": pass AgentEnv(url, token=...) or set {TOKEN_VARIABLE}"
        )
    if response.is_error:
        raise ServerUnavailableError(
            f"the server at {response.request.url} answered {response.status_code}: {_detail(response)}"
        )
    return response


def _detail(response: httpx.Response) -> str:
    try:
        return str(response.json()["detail"])
    except Exception:
        return response.text[:500]
