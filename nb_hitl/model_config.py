"""Where every demo and notebook gets its model: offline by default, a real one by one setting.

:func:`model_from_env` returns the caller's offline model (a
:class:`~nb_hitl.models.ScriptedChatModel`) unless ``NB_HITL_MODEL`` names a
provider and a model, ``"<provider>:<model>"``; then it builds AgentScope's
own model class with its own credential, reading the variables those
providers' clients read:

=========  ===========================  ======================================  ==========================
provider   AgentScope class             variables                                extra
=========  ===========================  ======================================  ==========================
openai     ``OpenAIChatModel``          ``OPENAI_API_KEY`` (required),            (none: ``openai`` comes
                                        ``OPENAI_BASE_URL``, ``OPENAI_ORG_ID``    with AgentScope)
dashscope  ``DashScopeChatModel``       ``DASHSCOPE_API_KEY`` (required),         (none)
                                        ``DASHSCOPE_BASE_URL``
ollama     ``OllamaChatModel``          ``OLLAMA_HOST``, ``OLLAMA_API_KEY``       ``nb_hitl[ollama]``
=========  ===========================  ======================================  ==========================

Any OpenAI-compatible server (vLLM, LM Studio, LiteLLM, a fake from
:mod:`nb_hitl.fakes`) is ``openai:<model>`` with ``OPENAI_BASE_URL``.
A missing variable or package raises :class:`ModelConfigError` naming it;
a model call the server refuses (a rejected key, an unknown model, no
answer) is told what to set by :func:`model_error_hint`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from agentscope.model import ChatModelBase

from .errors import NbHitlError

__all__ = [
    "MODEL_ENV",
    "PROVIDERS",
    "ModelConfigError",
    "ModelSpec",
    "parse_model_spec",
    "model_from_env",
    "describe_model",
    "model_error_hint",
]

#: The variable naming the model: ``"openai:gpt-4o-mini"``, ``"dashscope:qwen-plus"``, ``"ollama:llama3.1"``.
MODEL_ENV = "NB_HITL_MODEL"

#: The providers :func:`model_from_env` knows, with the variables each reads.
PROVIDERS: dict[str, dict[str, Any]] = {
    "openai": {
        "class": "OpenAIChatModel",
        "key": "OPENAI_API_KEY",
        "base_url": "OPENAI_BASE_URL",
        "example": "openai:gpt-4o-mini",
    },
    "dashscope": {
        "class": "DashScopeChatModel",
        "key": "DASHSCOPE_API_KEY",
        "base_url": "DASHSCOPE_BASE_URL",
        "example": "dashscope:qwen-plus",
    },
    "ollama": {"class": "OllamaChatModel", "key": None, "base_url": "OLLAMA_HOST", "example": "ollama:llama3.1"},
}


class ModelConfigError(NbHitlError, ValueError):
    """``NB_HITL_MODEL`` cannot become a model: a malformed value, an unknown
    provider, a missing API key variable or a missing optional package. The
    message names the variable or the ``pip install`` to run."""

    code = "model_config"


@dataclass(frozen=True)
class ModelSpec:
    """A parsed ``NB_HITL_MODEL`` value.

    Attributes:
        provider: ``"openai"``, ``"dashscope"`` or ``"ollama"``.
        model: the provider's model name (may itself hold ``:``, e.g. ``qwen3:14b``).
    """

    provider: str
    model: str


def parse_model_spec(value: str) -> ModelSpec:
    """Parse ``"<provider>:<model>"`` (the provider is case-insensitive).

    Raises:
        ModelConfigError: no ``:``, an empty part, or an unknown provider.
    """
    provider, sep, model = value.strip().partition(":")
    provider = provider.strip().lower()
    model = model.strip()
    examples = ", ".join(p["example"] for p in PROVIDERS.values())
    if not sep or not provider or not model:
        raise ModelConfigError(f"{MODEL_ENV}={value!r} is not '<provider>:<model>' (for example {examples}).")
    if provider not in PROVIDERS:
        raise ModelConfigError(
            f"{MODEL_ENV}={value!r}: unknown provider {provider!r}; use one of {', '.join(PROVIDERS)} "
            "(any OpenAI-compatible server is 'openai:<model>' with OPENAI_BASE_URL)."
        )
    return ModelSpec(provider, model)


def _need(env: Mapping[str, str], name: str, spec: ModelSpec) -> str:
    value = env.get(name, "").strip()
    if not value:
        raise ModelConfigError(
            f"{MODEL_ENV}={spec.provider}:{spec.model} needs the API key in {name}; set it "
            f"(any non-empty value for a local server that takes none), or unset {MODEL_ENV} for the offline model."
        )
    return value


def _optional(env: Mapping[str, str], name: str) -> str | None:
    return env.get(name, "").strip() or None


def _build(spec: ModelSpec, env: Mapping[str, str], stream: bool, kwargs: dict[str, Any]) -> ChatModelBase:
    if spec.provider == "openai":
        from agentscope.credential import OpenAICredential
        from agentscope.model import OpenAIChatModel

        credential = OpenAICredential.model_validate(
            {
                "api_key": _need(env, "OPENAI_API_KEY", spec),
                "base_url": _optional(env, "OPENAI_BASE_URL"),
                "organization": _optional(env, "OPENAI_ORG_ID"),
            }
        )
        return OpenAIChatModel(credential, spec.model, stream=stream, **kwargs)
    if spec.provider == "dashscope":
        from agentscope.credential import DashScopeCredential
        from agentscope.model import DashScopeChatModel

        fields: dict[str, Any] = {"api_key": _need(env, "DASHSCOPE_API_KEY", spec)}
        base_url = _optional(env, "DASHSCOPE_BASE_URL")
        if base_url:  # else AgentScope's default, DashScope's compatible-mode URL
            fields["base_url"] = base_url
        ds_credential = DashScopeCredential.model_validate(fields)
        return DashScopeChatModel(ds_credential, spec.model, stream=stream, **kwargs)
    # ollama
    try:
        import ollama  # noqa: F401  (AgentScope's OllamaChatModel imports it on construction)
    except ImportError as exc:
        raise ModelConfigError(
            f"{MODEL_ENV}={spec.provider}:{spec.model} needs the 'ollama' package: pip install \"nb_hitl[ollama]\"."
        ) from exc
    from agentscope.credential import OllamaCredential
    from agentscope.model import OllamaChatModel

    api_key = _optional(env, "OLLAMA_API_KEY")
    if api_key and env is not os.environ:  # the ollama client reads os.environ itself; an env= mapping is passed on
        client_kwargs = dict(kwargs.pop("client_kwargs", None) or {})
        client_kwargs["headers"] = {"Authorization": f"Bearer {api_key}", **(client_kwargs.get("headers") or {})}
        kwargs["client_kwargs"] = client_kwargs
    return OllamaChatModel(OllamaCredential(host=_optional(env, "OLLAMA_HOST")), spec.model, stream=stream, **kwargs)


def model_from_env(
    default: ChatModelBase | Callable[[], ChatModelBase] | None = None,
    *,
    stream: bool = True,
    env: Mapping[str, str] | None = None,
    **model_kwargs: Any,
) -> ChatModelBase:
    """The model a demo or notebook should use: ``default`` unless ``NB_HITL_MODEL`` is set.

    Args:
        default: the offline model (or a function making it, called only
            when needed), used when ``NB_HITL_MODEL`` is unset or empty.
        stream: stream the real model's answer (AgentScope's ``stream``).
        env: the variables to read (``os.environ`` by default).
        **model_kwargs: passed to AgentScope's model class (``max_retries``,
            ``parameters``, ``client_kwargs``, ...).

    Returns:
        ChatModelBase: ``default``, or AgentScope's ``OpenAIChatModel`` /
        ``DashScopeChatModel`` / ``OllamaChatModel`` (see the module table).

    Raises:
        ModelConfigError: a malformed ``NB_HITL_MODEL``, an unknown provider,
            a missing key variable or package, or no ``NB_HITL_MODEL`` and
            no ``default``.
    """
    env = os.environ if env is None else env
    value = env.get(MODEL_ENV, "").strip()
    if not value:
        if default is None:
            raise ModelConfigError(f"No model: set {MODEL_ENV} (for example openai:gpt-4o-mini).")
        if isinstance(default, ChatModelBase):
            return default
        return default()
    return _build(parse_model_spec(value), env, stream, dict(model_kwargs))


def describe_model(model: ChatModelBase) -> str:
    """One line naming a model for a notebook's output: ``"OpenAIChatModel gpt-4o-mini at http://..."``."""
    name = type(model).__name__
    credential = getattr(model, "credential", None)
    where = getattr(credential, "base_url", None) or getattr(credential, "host", None)
    return f"{name} {model.model}" + (f" at {where}" if where else "")


_CONNECTION_ERRORS = ("APIConnectionError", "ConnectError", "ConnectTimeout", "ConnectionError")


def model_error_hint(error: BaseException, env: Mapping[str, str] | None = None) -> str | None:
    """What to set when a model call failed on the model's configuration, or None.

    The provider is ``NB_HITL_MODEL``'s (the variables are those of
    :data:`PROVIDERS`): a 401 / 403 names the key variable, a 404
    ``NB_HITL_MODEL``, a server that did not answer the base URL variable;
    each also says which server the base URL variable points at (never the
    key). Without ``NB_HITL_MODEL`` (a model built by hand) the provider is
    the one whose client raised (``openai``, ``ollama``) and the hint says
    where :func:`model_from_env` would read the key and the server. Other
    errors: None.

    Args:
        error: what the model call raised (e.g. ``openai.AuthenticationError``).
        env: the variables to read (``os.environ`` by default).

    Returns:
        one or two sentences for the person, or None.
    """
    env = os.environ if env is None else env
    spec_value = env.get(MODEL_ENV, "").strip()
    provider: str | None = None
    if spec_value:
        try:
            provider = parse_model_spec(spec_value).provider
        except ModelConfigError:
            provider = None
    if provider is None:
        root = type(error).__module__.partition(".")[0]
        provider = root if root in PROVIDERS else None
    if provider is None:
        return None
    info = PROVIDERS[provider]
    key_var, base_var = info["key"] or "OLLAMA_API_KEY", info["base_url"]
    status = getattr(error, "status_code", None)
    if not spec_value:  # a model built by hand: say where model_from_env would read them
        via = f"(with {MODEL_ENV}={info['example']}, model_from_env reads {{}} from {{}})."
        if status in (401, 403):
            return f"The model server refused the API key ({status}): give the model a key it accepts " + via.format(
                "the key", f"{key_var} and the server from {base_var}"
            )
        if any(cls.__name__ in _CONNECTION_ERRORS for cls in type(error).__mro__):
            return "The model server did not answer: check the model's server address " + via.format("it", base_var)
        return None
    base = env.get(base_var, "").strip()
    where = f"{base_var}={base}" if base else f"{base_var} is unset: the provider's own server"
    if status in (401, 403):
        return (
            f"The model server refused the API key ({status}): set {key_var} to a key this server accepts "
            f"({where}) in the kernel's environment, then run the cell again."
        )
    if status == 404:
        return f"The model server knows no such model or endpoint (404): check {MODEL_ENV}={spec_value} and {where}."
    if any(cls.__name__ in _CONNECTION_ERRORS for cls in type(error).__mro__):
        return f"The model server did not answer: check {where}, and that the server runs and is reachable."
    return None
