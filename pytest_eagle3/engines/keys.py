"""Area ``keys``: where every checkpoint tensor lands, what is dropped or refused, what stays uninitialised.

A pure function of the fact sheet, the profile and the draft's shape (area ``layers``); the resolution
itself is ``keymap.resolve_keys``.
"""

from __future__ import annotations

from dataclasses import dataclass

from pytest_eagle3.engines.facts import FactSheet
from pytest_eagle3.engines.frozen import FrozenDict
from pytest_eagle3.engines.keymap import DraftShape, load_keys
from pytest_eagle3.engines.loadplan import Filed, Filing
from pytest_eagle3.engines.param_shapes import parameter_shapes
from pytest_eagle3.engines.profiles import Profile
from pytest_eagle3.engines.versions import SGLANG, VLLM
from pytest_eagle3.findings import Evidence, Finding, short
from pytest_eagle3.rules.vocab import ACCEPTANCE_NOTE


@dataclass(frozen=True)
class Keys:
    """Tensor -> parameter, what is dropped and left uninitialised, and the class's parameters and shapes."""

    #: Every parameter the class builds (a set: what key resolution matches against).
    params: frozenset[str]
    parameters: FrozenDict[str, tuple[str, ...]]
    dropped: FrozenDict[str, str]
    uninitialised: tuple[str, ...]
    #: The checkpoint's d2t tensor as the loader found it, None when there is none.
    d2t_name: str | None
    built: tuple[str, ...]
    shapes: FrozenDict[str, tuple[int, ...]]
    filed: Filed = Filed()


def plan_keys(sheet: FactSheet, prof: Profile, shape: DraftShape, fc_states: int) -> Keys:
    """Resolve the checkpoint's tensor names against the parameters ``shape``'s class builds."""
    out = Filing()
    load = load_keys(prof, list(sheet.tensors), shape)
    params, required, res = load.params, load.required, load.resolution
    parameters = FrozenDict({k: tuple(v) for k, v in sorted(res.loaded.items())})
    shared = {"model.embed_tokens.weight", "lm_head.weight"}
    missing = [p for p in sorted(required) if p not in res.loaded and p not in shared and p != "draft_id_to_target_id"]
    uninitialised = tuple(missing) + load.incomplete
    for name, error in res.refused:
        out.refuse("keys", Finding(
            "key-refused",
            f"{prof.label} refuses tensor {name} at load: {error}",
            (Evidence(name, "no matching draft parameter", "names the loader maps to a parameter"),),
            _key_fix(prof),
            (f"rule: {prof.source('unknown_key')}", f"rule: {prof.source('key_prefix')}"),
        ))
    lost = {n: why for n, why in res.dropped if not _harmless_drop(n, why)}
    if lost:
        names = sorted(lost)
        out.lose("keys", Finding(
            "dropped",
            f"{prof.label} will silently drop {len(names)} tensors: {names[0]}"
            + (f" ... ({len(names)})" if len(names) > 1 else "") + f" ({lost[names[0]]})",
            (Evidence("dropped", short(names), "every tensor loaded into a parameter"),),
            _key_fix(prof, names),
            (f"rule: {prof.source('unknown_key')}", f"rule: {prof.source('first_layer')}"),
        ))
    if uninitialised:
        out.lose("keys", Finding(
            "uninitialised",
            f"{prof.label} leaves {len(uninitialised)} draft parameters at their initial values "
            f"({uninitialised[0]}, ...): {ACCEPTANCE_NOTE}",
            (Evidence("uninitialised", short(uninitialised), "every parameter loaded from the checkpoint"),),
            _key_fix(prof, sorted(lost)) if lost else "ship the missing tensors under the names the engine expects",
            (f"rule: {prof.source('first_layer')}",),
        ))
    shapes = parameter_shapes(prof.engine, sheet.config, sheet.speculators, params, fc_states or 3,
                              sheet.draft_geometry)
    return Keys(params, parameters, FrozenDict(dict(res.dropped)), uninitialised, res.d2t_name,
                tuple(sorted(params)), FrozenDict(shapes), out.filed())


def _harmless_drop(name: str, why: str) -> bool:
    return "rotary" in why or "mask_hidden" in why or "use_aux_hidden_state is false" in why


def _key_fix(prof: Profile, names: list[str] | None = None) -> str:
    names = names or []
    if prof.engine == SGLANG and prof.value("first_layer") == "midlayer" and any(
        n.startswith(("layers.", "model.layers.")) for n in names
    ):
        return "rename layers.0.* -> midlayer.* in a copy of the checkpoint, or serve with SGLang >= 0.5.12"
    if prof.engine == VLLM and any(n.startswith("model.") for n in names):
        return "strip the model. prefix from the draft's tensor names (vLLM adds it)"
    return "rename the tensors to the engine's names: midlayer.* or layers.N.*, fc.weight, norm.weight, lm_head.weight, d2t"
