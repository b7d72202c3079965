"""Scan released engine sources for every config field the EAGLE-3 paths read, draft's and target's.

    python -m pytest_eagle3.scanners.fields vllm SRC/vllm/*   > vllm.json    (SRC/vllm/<VERSION>: an unpacked release)
    python -m pytest_eagle3.scanners.fields sglang SRC/sglang/* > sglang.json
    python -m pytest_eagle3.scanners.fields --merge vllm.json sglang.json > pytest_eagle3/knowledge/generated/field_scan.json

For each release, the files in :data:`SCOPES` (per engine; a glob, the release range where it exists, and
for large shared files a regex over the function names or bodies that are the EAGLE-3 path) are parsed
with :mod:`ast`. Every read of a field from a Hugging Face config object is recorded: ``config.X``,
``self.config.X``, ``hf_config.X``, ``draft_model_config.hf_config.X``, ``getattr(cfg, "X", ...)``,
``hasattr(cfg, "X")``, ``cfg.get("X")``, ``cfg["X"]``, ``"X" in cfg``; reads from a dict-valued
sub-config (``eagle_config``, ``rope_scaling``, ``quantization_config`` ...) are named ``sub.X``.
Local names bound to a config (``config = vllm_config.speculative_config.draft_model_config.hf_config``)
are followed inside a function. Whose config it is comes from the expression the field is read from
(:data:`ROLE_RULES`: a ``draft`` / ``target`` in the path decides, then the scope's own defaults);
where the code does not tell, the read is ``either``. The quantization config a draft layer gets is
recorded as the pseudo-field ``quantization_config`` (vLLM: ``vllm_config.quant_config`` is the
target's, ``get_draft_quant_config`` the draft's).

Prints ``{"releases": {engine: [...]}, "fields": {engine: [{"field", "reads", "releases": [[first,
last], ...], "where": [...]}]}}``: release ranges are contiguous runs over the releases scanned.
"""

from __future__ import annotations

import ast
import json
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from fnmatch import fnmatch
from pathlib import Path

from packaging.version import Version

sys.path.insert(0, str(Path(__file__).resolve().parent))

from pytest_eagle3.scanners.capture import known_roots

DRAFT = "draft"
TARGET = "target"
EITHER = "either"
ANY_NAME = r"."


@dataclass(frozen=True)
class Scope:
    """Files of one release the scanner reads: a glob under the release root, the functions in it that
    are on the EAGLE-3 path (``names`` over the qualified name, or ``body`` over the function's source;
    both None: the whole file), and the role a bare ``config`` has there."""

    glob: str
    names: str | None = None
    body: str | None = None
    bare: str = EITHER
    since: str | None = None
    until: str | None = None
    #: Role rules of this scope, before the engine's: (regex over the dotted expression, role).
    roles: tuple[tuple[str, str], ...] = ()
    #: Functions (regex over the qualified name) whose bare config is known to be one side's.
    bare_in: tuple[tuple[str, str], ...] = ()


EAGLE_PATH = r"eagle|aux_hidden|aux_layer|drafter|draft_model|speculat|spec_decode|hidden_states_to_capture"
#: Per engine, the files of the EAGLE-3 path. Sources: the releases' trees (``ls`` per release);
#: globs absorb the moves (config.py -> config/speculative.py at vLLM 0.10.2, model_runner.py ->
#: model_runner_components/spec_aux_hidden_state.py at SGLang 0.5.16).
SCOPES: dict[str, tuple[Scope, ...]] = {
    "vllm": (
        # the EAGLE-3 draft classes: a bare config is the draft's; vllm_config.model_config is the target's
        Scope("vllm/model_executor/models/*eagle3*.py", bare=DRAFT,
              roles=((r"(^|\.)model_config\.hf_(text_)?config$", TARGET),)),
        # the target-model layers the draft classes build from the draft's config (rope, positions, sliding
        # window, attention bias, quantization: the draft passes its own config and quant_config)
        Scope("vllm/model_executor/models/llama.py", names=r"^Llama(DecoderLayer|Attention|MLP)\.", bare=DRAFT,
              roles=((r"(^|\.)model_config\.hf_(text_)?config$", TARGET),)),
        Scope("vllm/model_executor/models/qwen3.py", names=r"^Qwen3(DecoderLayer|Attention)\.", bare=DRAFT, since="0.24.0",
              roles=((r"(^|\.)model_config\.hf_(text_)?config$", TARGET),)),
        Scope("vllm/model_executor/models/deepseek_v2.py", names=r"^DeepseekV2(MLAAttention|MLP)\.__init__", bare=DRAFT,
              since="0.18.0",
              roles=((r"(^|\.)model_config\.hf_(text_)?config$", TARGET),)),
        # get_rope: the keys of the draft's rope_scaling / rope_parameters the rope is built from
        Scope("vllm/model_executor/layers/rotary_embedding.py", names=r"^get_rope$", bare=DRAFT),
        Scope("vllm/model_executor/layers/rotary_embedding/__init__.py", names=r"^get_rope$", bare=DRAFT),
        # the proposer (V1) and model runner V2's EAGLE speculator
        Scope("vllm/v1/spec_decode/eagle.py"),
        Scope("vllm/v1/spec_decode/llm_base_proposer.py"),
        Scope("vllm/v1/worker/gpu/spec_decode/eagle/*.py"),
        Scope("vllm/v1/worker/gpu/spec_decode/speculator.py"),
        # the speculative config and the draft config conversions
        # (hf_config_override rewrites the draft's config: vllm passes it as the draft ModelConfig's hf_overrides)
        Scope("vllm/config.py", names=r"^SpeculativeConfig\.", bare_in=((r"hf_config_override", DRAFT),)),
        Scope("vllm/config/__init__.py", names=r"^SpeculativeConfig\.", bare_in=((r"hf_config_override", DRAFT),)),
        Scope("vllm/config/speculative.py", bare_in=((r"hf_config_override", DRAFT),)),
        Scope("vllm/transformers_utils/configs/eagle.py"),
        Scope("vllm/transformers_utils/configs/speculators/*.py"),
        # the aux-layer code and drafter set-up of the model runners (V1, V2)
        Scope("vllm/v1/worker/gpu_model_runner.py", names=EAGLE_PATH, body=r"eagle3|aux_hidden"),
        Scope("vllm/v1/worker/gpu/model_runner.py", names=EAGLE_PATH, body=r"eagle3|aux_hidden"),
        # CUDA-graph dispatch touching the drafter
        Scope("vllm/v1/cudagraph_dispatcher.py", names=EAGLE_PATH, body=r"drafter|speculative|eagle"),
    ),
    "sglang": (
        # the EAGLE-3 draft classes: their config is the draft's
        Scope("sglang/srt/models/*eagle3*.py", bare=DRAFT),
        # the target-model layers the draft classes build from the draft's config
        Scope("sglang/srt/models/llama.py", names=r"^Llama(DecoderLayer|Attention|MLP)\.", bare=DRAFT),
        Scope("sglang/srt/models/deepseek_v2.py", names=r"^DeepseekV2(AttentionMLA|MLP)\.__init__", bare=DRAFT,
              since="0.5.12"),
        Scope("sglang/srt/layers/rotary_embedding.py", names=r"^get_rope$", bare=DRAFT),
        Scope("sglang/srt/layers/rotary_embedding/factory.py", names=r"^get_rope$", bare=DRAFT),
        # the EAGLE workers, their helpers and the draft CUDA-graph runners: EAGLEWorker is the draft worker
        # (TpModelWorker with is_draft_worker=True), so its model_runner is the draft's
        Scope("sglang/srt/speculative/eagle*.py", bare_in=((r"Draft|draft", DRAFT),),
              roles=((r"^self\.model_runner\.model_config\.hf_config$", DRAFT),)),
        Scope("sglang/srt/speculative/multi_layer_eagle*.py"),
        Scope("sglang/srt/speculative/draft_*.py"),
        Scope("sglang/srt/speculative/spec_utils.py", names=EAGLE_PATH),
        # the speculative_* settings; ServerArgs.get_model_config() is ModelConfig.from_server_args(self): the target's
        Scope("sglang/srt/server_args.py", names=r"specul|eagle|draft", body=r"speculative_algorithm|EAGLE3",
              bare=TARGET, roles=((r"(^|\.)model_config\.hf_(text_)?config$", TARGET),)),
        # the model runner's EAGLE-3 capture (shared by target and draft runners: the role is decided
        # by is_draft_worker, not the expression)
        Scope("sglang/srt/model_executor/model_runner.py", names=EAGLE_PATH, body=r"eagle3|aux_hidden"),
        Scope("sglang/srt/model_executor/model_runner_components/spec_aux_hidden_state.py"),
        Scope("sglang/srt/model_executor/cuda_graph_runner.py", names=EAGLE_PATH, body=r"eagle|aux_hidden"),
        # the draft-only rewrites of the draft's config
        Scope("sglang/srt/configs/model_config.py", names=r"_config_draft_model", bare=DRAFT),
        # the dtype each model config (the draft's too) takes from its config.json when --dtype auto
        Scope("sglang/srt/configs/model_config.py", names=r"^_get_and_verify_dtype$"),
    ),
    "vllm-ascend": (
        # its patches of vLLM's EAGLE-3 draft classes and its own draft class: a bare config is the draft's
        Scope("vllm_ascend/patch/worker/patch_eagle3*.py", bare=DRAFT,
              roles=((r"(^|\.)model_config\.hf_(text_)?config$", TARGET),)),
        Scope("vllm_ascend/models/*eagle3*.py", bare=DRAFT,
              roles=((r"(^|\.)model_config\.hf_(text_)?config$", TARGET),)),
        # its proposers (spec_decode/eagle_proposer.py; 0.23.0 on llm_base_proposer.py)
        Scope("vllm_ascend/spec_decode/eagle_proposer.py"),
        Scope("vllm_ascend/spec_decode/llm_base_proposer.py"),
        # the aux-layer code and drafter set-up of its model runner
        Scope("vllm_ascend/worker/model_runner_v1.py", names=EAGLE_PATH + r"|load_model",
              body=r"eagle3|aux_hidden"),
        # its patch of SpeculativeConfig (0.11.0)
        Scope("vllm_ascend/patch/platform/patch_config.py", bare_in=((r"hf_config_override", DRAFT),)),
    ),
    "tpu-inference": (
        # the JAX draft class: its hf_config is the draft's (speculative_config.draft_model_config)
        Scope("tpu_inference/models/jax/llama_eagle3.py", bare=DRAFT,
              roles=((r"(^|\.)vllm_config\.model_config", TARGET),)),
        # the target's capture (the aux ids it sets) and the proposer
        Scope("tpu_inference/models/jax/llama3.py", names=EAGLE_PATH, body=r"eagle3|aux_hidden", bare=TARGET),
        Scope("tpu_inference/spec_decode/jax/eagle3.py"),
        Scope("tpu_inference/models/common/model_loader.py", names=r"architecture|impl_type"),
    ),
}

#: Engine-wide role rules, after the scope's (regex over the dotted expression the field is read from).
ROLE_RULES: dict[str, tuple[tuple[str, str], ...]] = {
    "vllm": (
        (r"draft", DRAFT),
        (r"target|verifier", TARGET),
        # outside the draft classes, model_config is the target's (VllmConfig.model_config)
        (r"(^|\.)model_config\.hf_(text_)?config$", TARGET),
    ),
    "sglang": (
        (r"draft", DRAFT),
        (r"target", TARGET),
    ),
    "vllm-ascend": (
        (r"draft", DRAFT),
        (r"target|verifier", TARGET),
        (r"(^|\.)model_config\.hf_(text_)?config$", TARGET),
    ),
    "tpu-inference": (
        (r"draft", DRAFT),
        (r"target", TARGET),
        (r"(^|\.)model_config\.hf_(text_)?config$", TARGET),
    ),
}

#: Names of objects that are Hugging Face configs (a field read from them is recorded).
CONFIG_NAMES = frozenset({
    "config", "hf_config", "hf_text_config", "text_config", "cfg", "draft_config", "target_config",
    "draft_hf_config", "target_hf_config", "hf_draft_config", "draft_text_config", "target_text_config",
    "model_hf_config", "pretrained_config",
})
#: Dict-valued sub-configs: a field read from them is named ``sub.field``.
SUB_CONFIGS = frozenset({
    "eagle_config", "dflash_config", "rope_scaling", "rope_parameters", "quantization_config",
    "speculators_config", "transformer_layer_config", "proposal_methods", "dspark_config",
})
#: Sub-configs that are the config itself for our purpose (the text part of a multimodal config).
PASSTHROUGH = frozenset({"text_config", "hf_text_config", "get_text_config", "llm_config", "language_config"})
#: Attribute names that are methods or object internals, never fields.
NOT_FIELDS = frozenset({
    "get", "to_dict", "to_diff_dict", "update", "items", "keys", "values", "__dict__", "__class__",
    "get_text_config", "to_json_string", "save_pretrained", "copy", "pop", "setdefault", "__name__",
})


def _dotted(node: ast.AST) -> str | None:
    """``a.b.c`` for a Name/Attribute chain, else None."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def _const(node: ast.AST | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


@dataclass(frozen=True)
class Base:
    """A config object an expression stands for: whose, and the prefix its fields get."""

    role: str
    prefix: str = ""

    def sub(self, name: str) -> Base:
        """The config of this one's sub-config ``name``: this one itself for a text part (:data:`PASSTHROUGH`), else
        the same role with ``name.`` added to the prefix."""
        return self if name in PASSTHROUGH else Base(self.role, f"{self.prefix}{name}.")


class _FunctionScan:
    """The reads of one function (aliases followed within it)."""

    def __init__(self, engine: str, scope: Scope, where: str) -> None:
        self.engine, self.scope, self.where = engine, scope, where
        self.aliases: dict[str, Base] = {}
        self.not_configs: set[str] = set()
        self.reads: list[tuple[str, str, str]] = []

    # ---- what an expression is
    def role_of(self, dotted: str) -> str:
        for pattern, role in (*self.scope.roles, *ROLE_RULES[self.engine]):
            if re.search(pattern, dotted):
                return role
        qualname = self.where.rpartition(":")[2]
        for pattern, role in self.scope.bare_in:
            if re.search(pattern, qualname):
                return role
        return self.scope.bare

    def base(self, node: ast.AST) -> Base | None:
        """The config ``node`` stands for, or None."""
        if isinstance(node, ast.BoolOp):
            for value in node.values:
                found = self.base(value)
                if found is not None:
                    return found
            return None
        if isinstance(node, ast.Name):
            if node.id in self.aliases:
                return self.aliases[node.id]
            if node.id in self.not_configs:
                return None
            if node.id in SUB_CONFIGS:
                return Base(self.scope.bare if self.scope.bare != EITHER else EITHER, f"{node.id}.")
            return Base(self.role_of(node.id)) if node.id in CONFIG_NAMES else None
        if isinstance(node, ast.Attribute):
            dotted = _dotted(node)
            if node.attr in CONFIG_NAMES and dotted is not None and node.attr not in PASSTHROUGH:
                return Base(self.role_of(dotted))
            inner = self.base(node.value)
            if inner is not None and (node.attr in SUB_CONFIGS or node.attr in PASSTHROUGH):
                return inner.sub(node.attr)
            if node.attr in CONFIG_NAMES and dotted is not None:
                return Base(self.role_of(dotted))
            return None
        if isinstance(node, ast.Call):
            func = node.func
            # cfg.get_text_config(), getattr(cfg, "eagle_config", ...), cfg.get("eagle_config", {})
            if isinstance(func, ast.Attribute) and func.attr == "get_text_config":
                return self.base(func.value)
            if isinstance(func, ast.Name) and func.id in ("get_hf_text_config", "get_text_config"):
                return self.base(node.args[0]) if node.args else None
            name = None
            owner: ast.AST | None = None
            if isinstance(func, ast.Name) and func.id == "getattr" and len(node.args) >= 2:
                owner, name = node.args[0], _const(node.args[1])
            elif isinstance(func, ast.Attribute) and func.attr == "get" and node.args:
                owner, name = func.value, _const(node.args[0])
            if owner is not None and name is not None and (name in SUB_CONFIGS or name in PASSTHROUGH):
                inner = self.base(owner)
                return inner.sub(name) if inner is not None else None
        if isinstance(node, ast.Subscript):
            name = _const(node.slice)
            inner = self.base(node.value)
            if inner is not None and name in SUB_CONFIGS:
                return inner.sub(name)
        return None

    # ---- recording
    def read(self, base: Base, name: str) -> None:
        if name and not name.startswith("_") and name not in NOT_FIELDS and name not in PASSTHROUGH:
            self.reads.append((base.prefix + name, base.role, self.where))

    def bind(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        """Follow ``name = <config expression>`` inside the function. A parameter named like a config is
        one; a name bound to something else (a vLLM ModelConfig) is not; a fallback under
        ``if name is None:`` does not change whose it is."""
        args = node.args
        for arg in (*args.posonlyargs, *args.args, *args.kwonlyargs):
            if arg.arg in CONFIG_NAMES:
                self.aliases[arg.arg] = Base(self.role_of(arg.arg))
        self._bind_body(node.body, fallback=None)

    def _bind_body(self, body: list[ast.stmt], fallback: str | None) -> None:
        for stmt in body:
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
                self._bind(stmt.targets[0].id, stmt.value, fallback)
            elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value is not None:
                self._bind(stmt.target.id, stmt.value, fallback)
            if isinstance(stmt, ast.If):
                test = stmt.test
                name = (test.left.id if isinstance(test, ast.Compare) and isinstance(test.left, ast.Name)
                        and isinstance(test.ops[0], ast.Is) and isinstance(test.comparators[0], ast.Constant)
                        and test.comparators[0].value is None else None)
                self._bind_body(stmt.body, name)
                self._bind_body(stmt.orelse, None)
            elif isinstance(stmt, (ast.For, ast.While, ast.With, ast.AsyncWith, ast.AsyncFor)):
                self._bind_body(stmt.body, None)
            elif isinstance(stmt, ast.Try):
                for part in (stmt.body, *(h.body for h in stmt.handlers), stmt.orelse, stmt.finalbody):
                    self._bind_body(part, None)

    def _bind(self, target: str, value: ast.AST, fallback: str | None) -> None:
        found = self.base(value)
        previous = self.aliases.get(target)
        if found is None:
            if target in CONFIG_NAMES and not isinstance(value, ast.Call) and previous is None:
                self.not_configs.add(target)
            return
        if target == fallback and previous is not None:
            return
        if previous is not None and previous != found:
            # bound twice: the side only if both agree; the first binding's sub-config name
            found = Base(found.role if found.role == previous.role else EITHER, previous.prefix)
        self.aliases[target] = found
        self.not_configs.discard(target)

    def visit(self, node: ast.AST) -> None:
        for sub in ast.walk(node):
            if isinstance(sub, ast.Attribute) and isinstance(sub.ctx, ast.Load):
                if (self.engine == "vllm" and self.scope.bare == DRAFT
                        and (_dotted(sub) or "").endswith("vllm_config.quant_config")):
                    # VllmConfig.quant_config: built from the target's model config
                    self.reads.append(("quantization_config", TARGET, self.where))
                base = self.base(sub.value)
                if base is not None:
                    self.read(base, sub.attr)
            elif isinstance(sub, ast.Call):
                self.call(sub)
            elif isinstance(sub, ast.Subscript) and isinstance(sub.ctx, ast.Load):
                name = _const(sub.slice)
                base = self.base(sub.value)
                if base is not None and name is not None:
                    self.read(base, name)
            elif isinstance(sub, ast.Compare) and len(sub.ops) == 1 and isinstance(sub.ops[0], (ast.In, ast.NotIn)):
                name = _const(sub.left)
                base = self.base(sub.comparators[0])
                if base is not None and name is not None:
                    self.read(base, name)

    def call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Name) and func.id in ("getattr", "hasattr") and len(node.args) >= 2:
            base, name = self.base(node.args[0]), _const(node.args[1])
            if base is not None and name is not None:
                self.read(base, name)
        elif isinstance(func, ast.Attribute) and func.attr == "get" and node.args:
            base, name = self.base(func.value), _const(node.args[0])
            if base is not None and name is not None:
                self.read(base, name)
        elif isinstance(func, ast.Name) and func.id == "get_draft_quant_config":
            self.reads.append(("quantization_config", DRAFT, self.where))
        if self.engine == "vllm" and _dotted(func) is not None and str(_dotted(func)).endswith("ModelConfig"):
            for keyword in node.keywords:
                if keyword.arg == "dtype":
                    dotted = _dotted(keyword.value) or ""
                    role = TARGET if "target" in dotted else DRAFT if "draft" in dotted else EITHER
                    self.reads.append(("dtype", role, self.where))


def _functions(tree: ast.Module) -> Iterator[tuple[str, ast.AST]]:
    """(qualified name, node) for every top-level and class-level function, and module-level code."""
    module_level = [n for n in tree.body if not isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]
    yield "<module>", ast.Module(body=module_level, type_ignores=[])
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node.name, node
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    yield f"{node.name}.{item.name}", item
                elif not isinstance(item, ast.ClassDef):
                    yield f"{node.name}", ast.Module(body=[item], type_ignores=[])


def _in_range(scope: Scope, version: Version) -> bool:
    return ((scope.since is None or version >= Version(scope.since))
            and (scope.until is None or version <= Version(scope.until)))


def scan_file(engine: str, scope: Scope, path: Path, rel: str) -> list[tuple[str, str, str]]:
    """(field, role, where) for every config read in the scope's part of one file."""
    text = path.read_text(encoding="utf-8", errors="replace")
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return []
    reads: list[tuple[str, str, str]] = []
    lines = text.splitlines()
    for qualname, node in _functions(tree):
        if scope.names is not None or scope.body is not None:
            by_name = scope.names is not None and re.search(scope.names, qualname, re.IGNORECASE)
            source = ("" if isinstance(node, ast.Module)
                      else "\n".join(lines[node.lineno - 1:node.end_lineno]))  # type: ignore[attr-defined]
            by_body = scope.body is not None and bool(source) and re.search(scope.body, source)
            if not (by_name or by_body):
                continue
        scan = _FunctionScan(engine, scope, f"{rel}:{qualname}")
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            scan.bind(node)
        scan.visit(node)
        reads += scan.reads
    return reads


def scan(engine: str, root: Path, version: Version | None = None) -> list[tuple[str, str, str]]:
    """Every (field, role, where) read on the EAGLE-3 path of one release rooted at ``root``."""
    version = version or _version(root)
    reads: list[tuple[str, str, str]] = []
    seen: set[tuple[Path, Scope]] = set()
    for scope in SCOPES[engine]:
        if not _in_range(scope, version):
            continue
        for path in sorted(root.glob(scope.glob)):
            rel = path.relative_to(root).as_posix()
            if (path, scope) in seen or not fnmatch(rel, scope.glob):
                continue
            seen.add((path, scope))
            reads += scan_file(engine, scope, path, rel)
    return reads


def _version(root: Path) -> Version:
    return Version(root.name.rsplit("-", 1)[-1])


def ranges(present: list[str], releases: list[str]) -> list[list[str]]:
    """Contiguous runs of ``present`` over the ordered ``releases``: [[first, last], ...]."""
    runs: list[list[str]] = []
    inside = False
    for release in releases:
        if release in present:
            if inside:
                runs[-1][1] = release
            else:
                runs.append([release, release])
            inside = True
        else:
            inside = False
    return runs


def scan_engine(engine: str, roots: list[Path], where_per_field: int = 3) -> dict[str, dict[str, object]]:
    """The scan of every release root: the release list and one record per (field, role)."""
    ordered = known_roots(engine, roots)
    releases = [str(v) for v, _ in ordered]
    seen: dict[tuple[str, str], list[str]] = {}
    where: dict[tuple[str, str], dict[str, None]] = {}
    for version, root in ordered:
        for field, role, place in scan(engine, root, version):
            key = (field, role)
            hits = seen.setdefault(key, [])
            if not hits or hits[-1] != str(version):
                hits.append(str(version))
            places = where.setdefault(key, {})
            places.pop(place, None)
            places[place] = None  # most recent release last
    records = [
        {"field": field, "reads": role, "releases": ranges(hits, releases),
         "where": sorted(list(where[(field, role)])[-where_per_field:])}
        for (field, role), hits in sorted(seen.items())
    ]
    return {"releases": {engine: releases}, "fields": {engine: records}}


def merge(parts: list[dict[str, dict[str, object]]]) -> dict[str, dict[str, object]]:
    """The engines' scans (:func:`scan_engine` output) as one: their releases and field records side by side."""
    out: dict[str, dict[str, object]] = {"releases": {}, "fields": {}}
    for part in parts:
        for key in out:
            out[key].update(part[key])
    return out


def main(argv: list[str]) -> int:
    """Scan the release roots of the engine named first and print the JSON (``--merge FILE...``: print the files' scans
    merged); 2 on a usage error."""
    if len(argv) < 2 or (argv[0] not in SCOPES and argv[0] != "--merge"):
        print(__doc__, file=sys.stderr)
        return 2
    if argv[0] == "--merge":
        result = merge([json.loads(Path(p).read_text(encoding="utf-8")) for p in argv[1:]])
    else:
        roots = [Path(a) for a in argv[1:]]
        missing = [str(r) for r in roots if not r.is_dir()]
        if missing:
            print(f"not a directory: {', '.join(missing)}", file=sys.stderr)
            return 2
        result = scan_engine(argv[0], roots)
    sys.stdout.write(dumps(result))
    return 0


def dumps(result: dict[str, dict[str, object]]) -> str:
    """Compact JSON with one field record per line (small diffs when a release is added)."""
    def one(value: object) -> str:
        return json.dumps(value, separators=(",", ":"), sort_keys=True)

    releases = ",\n".join(f"  {one(engine)}:{one(names)}" for engine, names in sorted(result["releases"].items()))
    engines = []
    for engine, records in sorted(result["fields"].items()):
        body = ",\n".join(f"   {one(record)}" for record in records)  # type: ignore[attr-defined]
        engines.append(f"  {one(engine)}:[\n{body}\n  ]")
    return '{"releases":{\n' + releases + '\n },\n "fields":{\n' + ",\n".join(engines) + "\n }\n}\n"


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
