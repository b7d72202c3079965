"""The draft-class scan's reading of one release: its model package parsed lazily, the module bindings of
``scanners/imports.py`` (re-exports, platform branches, aliases), and the expression helpers the graphs share.

Read by ``scanners/draft_graph.py`` and ``scanners/draft_classes.py`` (which says what the scan records)."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

from pytest_eagle3.scanners.capture import ClassRef, Release
from pytest_eagle3.scanners.imports import Module

MODELS = {"vllm": "vllm/model_executor/models", "sglang": "sglang/srt/models",
          "tokenspeed": "tokenspeed/runtime/models", "lmdeploy": "lmdeploy/pytorch/models",
          "mlx-vlm": "mlx_vlm/speculative/drafters"}
ABSOLUTE = {"vllm": "vllm.model_executor.models.", "sglang": "sglang.srt.models.",
            "tokenspeed": "tokenspeed.runtime.models.", "lmdeploy": "lmdeploy.pytorch.models.",
            "mlx-vlm": "mlx_vlm.speculative.drafters."}
ENTRIES = {"vllm": ("forward", "combine_hidden_states", "compute_logits", "embed_input_ids", "get_input_embeddings"),
           "sglang": ("forward",), "tokenspeed": ("forward",), "lmdeploy": ("forward", "get_logits"),
           "mlx-vlm": ("prefill_from_target_hidden", "draft_block", "__call__")}
#: A callee that builds weights the checkpoint fills (no resolvable class in the package).
WEIGHTS = re.compile(r"Norm|Linear|Embedding|LMHead|Parameter|Conv")
#: The config fields whose state the table records (others the classes read are not judged by any rule).
FIELDS = ("norm_before_residual", "norm_before_fc", "eagle_config.norm_before_fc", "fc_norm", "use_aux_norm",
          "norm_output", "eagle_config.use_aux_hidden_state", "num_aux_hidden_states", "num_aux_layers",
          "eagle_aux_hidden_state_layer_ids", "eagle_config.eagle_aux_hidden_state_layer_ids", "target_hidden_size",
          "draft_vocab_size", "tie_word_embeddings", "attention_bias", "bias", "mlp_bias", "logit_scale",
          "num_hidden_layers", "rope_scaling", "rope_parameters", "layer_types", "sliding_window", "head_dim")
READ, UNUSED = "read", "loaded-not-applied"


class DraftRelease(Release):
    """One release's model package (the capture scan's reading), for this scan's engines, parsed lazily."""

    absolute = ABSOLUTE
    models = MODELS

    def __init__(self, engine: str, root: Path) -> None:
        super().__init__(engine, root)
        self.interface = None  # the capture interface is the capture scan's

    def _modules(self) -> dict[str, Module]:
        return _Lazy(self)

    def by_name(self, name: str) -> ClassRef | None:
        """The first class named ``name`` in any module of the release (each module parsed as the search reaches it), or
        None."""
        for module in list(self.paths):
            found = self.modules.get(module)
            if found is not None and name in found.classes:
                return module, found.classes[name]
        return None

    def base_refs(self, ref: ClassRef) -> Iterator[ClassRef]:
        """The bases, where ``class LlamaDecoderLayer(LlamaDecoderLayer)`` names the imported class."""
        module, node = ref
        for base in node.bases:
            while isinstance(base, ast.Subscript):
                base = base.value
            found: ClassRef | None = None
            if isinstance(base, ast.Name):
                found = self.resolve(module, base.id)
                if found is not None and found[1] is node:
                    imported = self.modules[module].imports.get(base.id)
                    found = self.resolve(*imported) if imported else None
            elif isinstance(base, ast.Attribute) and not ast.unparse(base).startswith(("nn.", "torch.")):
                found = self.by_name(base.attr)
            if found is not None and found[1] is not node:
                yield found


class _Lazy(dict[str, Module]):
    """The release's modules, each parsed on first use (a release has hundreds; a draft class reaches a few)."""

    def __init__(self, release: DraftRelease) -> None:
        super().__init__()
        self.release = release

    def get(self, key: str, default: Module | None = None) -> Module | None:  # type: ignore[override]
        if key not in self and key in self.release.paths:
            path, package = self.release.paths[key]
            self[key] = self.release._parse(key, path, package)
        return super().get(key, default)

    def __getitem__(self, key: str) -> Module:
        found = self.get(key)
        if found is None:
            raise KeyError(key)
        return found


# ---------------------------------------------------------------- expressions
def chain_of(node: ast.AST) -> tuple[str, list[str]] | None:
    """``a.b.c`` -> ("a", ["b", "c"]); ``self.layers[0].x`` -> ("self", ["layers", "*", "x"])."""
    parts: list[str] = []
    while True:
        if isinstance(node, ast.Attribute):
            parts.insert(0, node.attr)
            node = node.value
        elif isinstance(node, ast.Subscript):
            parts.insert(0, "*")
            node = node.value
        elif isinstance(node, ast.Name):
            return node.id, parts
        else:
            return None


def fields_of(node: ast.AST, local: dict[str, set[str]], own: dict[str, set[str]]) -> set[str]:
    """The draft-config fields an expression reads (through locals and ``self`` attributes set from fields)."""
    found: set[str] = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Call):
            name = sub.func.attr if isinstance(sub.func, ast.Attribute) else getattr(sub.func, "id", "")
            args = [a.value for a in sub.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
            if name in ("getattr", "hasattr") and len(sub.args) >= 2 and args:
                owner = sub.args[0]
                chain = chain_of(owner)
                prefix = "eagle_config." if chain and "eagle_config" in (chain[0], *chain[1]) else ""
                found.add(prefix + args[0])
            elif name == "get" and args and isinstance(sub.func, ast.Attribute):
                chain = chain_of(sub.func.value)
                if chain and "eagle_config" in (chain[0], *chain[1]):
                    found.add("eagle_config." + args[0])
                elif chain and "config" in chain[0].lower() + "".join(chain[1]).lower():
                    found.add(args[0])
        elif isinstance(sub, ast.Subscript) and isinstance(sub.slice, ast.Constant) \
                and isinstance(sub.slice.value, str):
            chain = chain_of(sub.value)
            if chain and "eagle_config" in (chain[0], *chain[1]):
                found.add("eagle_config." + sub.slice.value)
        elif isinstance(sub, ast.Compare) and len(sub.ops) == 1 and isinstance(sub.ops[0], ast.In) \
                and isinstance(sub.left, ast.Constant) and isinstance(sub.left.value, str):
            chain = chain_of(sub.comparators[0])
            if chain and "eagle_config" in (chain[0], *chain[1]):
                found.add("eagle_config." + sub.left.value)
        elif isinstance(sub, ast.Attribute):
            chain = chain_of(sub)
            if chain is None:
                continue
            root, parts = chain
            if root == "self" and parts and parts[0] in own and len(parts) == 1:
                found |= own[parts[0]]
            elif (root.endswith("config") and root != "eagle_config"
                  or (root == "self" and parts[:1] == ["config"])) and parts:
                rest = parts[1:] if root == "self" else parts
                if rest and rest[0] not in ("get",):
                    found.add(rest[0])
        elif isinstance(sub, ast.Name) and sub.id in local:
            found |= local[sub.id]
    return found


def _callee(call: ast.Call) -> ast.expr:
    return call.func


def name_of(node: ast.expr) -> str:
    """The last name of ``a.b.name`` / ``name``; "" for any other expression."""
    return node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else ""

