"""vLLM-Ascend (the vLLM platform plugin for Ascend NPUs): the engine object, and its behaviour rows.

Read in the released source of every release on the index with an EAGLE-3 path: 0.11.0, 0.13.0, 0.18.0 (wheels),
0.23.0 (wheel) and 0.23.0.post1 (sdist); 0.7.3, 0.7.3.post1 and 0.9.1 have none (no ``eagle3`` in
``vllm_ascend/``). Each release pins the vLLM release of its own number (``docs/source/community/
versioning_policy.md``: 0.23.0.post1 pins vLLM 0.23.0). It needs NPUs to run: judged statically.

vLLM-Ascend brings its own model runner (``worker/model_runner_v1.py NPUModelRunner``), its own EAGLE-3 proposer
(``spec_decode/eagle_proposer.py``; 0.23.0 on ``spec_decode/llm_base_proposer.py``) and patches (``patch/``), and
builds and loads the draft through vLLM's ``get_model`` and vLLM's draft classes. A behaviour its own code decides
is a row cited in ``vllm_ascend``; every other row is vLLM's row at the pinned release, carried over from
``knowledge/engines/vllm.py`` (:func:`_carried`) with ``origin`` vLLM and ``pinned`` that release: the code that
runs is vLLM's at the release vLLM-Ascend pins, called from vLLM-Ascend's own cited place (its ``get_model`` call),
so the row is evidence, not a rule borrowed by analogy (``knowledge.table.Row.pinned``). The vLLM cites stay on the
vLLM row, checked against vLLM's wheels.
"""

from __future__ import annotations

from typing import Any

from packaging.version import Version

from pytest_eagle3.knowledge.draft_class import LLAMA, DraftClass
from pytest_eagle3.knowledge.engine import (
    BehaviourSpan,
    CaptureEntry,
    Confirmation,
    Engine,
    Loading,
    TableRow,
    Tables,
)
from pytest_eagle3.knowledge.engines import vllm
from pytest_eagle3.knowledge.engines.shared import (
    ALL_FIELDS,
    CAPTURES,
    LLAMA_COUNT,
    NO,
    REFUSED,
    TOP_FIELD,
    UNIFORM_TYPE_ELSE_DIVISIBLE,
)
from pytest_eagle3.knowledge.evidence import Cite

NAME = "vllm-ascend"

#: Every release on the index with an EAGLE-3 path, oldest first.
RELEASES = ("0.11.0", "0.13.0", "0.18.0", "0.23.0", "0.23.0.post1")

#: The vLLM release each pins (docs/source/community/versioning_policy.md's compatibility table).
VLLM_PIN = {"0.11.0": "0.11.0", "0.13.0": "0.13.0", "0.18.0": "0.18.0", "0.23.0": "0.23.0", "0.23.0.post1": "0.23.0"}

RUNNER = "vllm_ascend/worker/model_runner_v1.py"
PROPOSER = "vllm_ascend/spec_decode/eagle_proposer.py"
BASE = "vllm_ascend/spec_decode/llm_base_proposer.py"
INIT_PATCH = "vllm_ascend/patch/worker/patch_eagle3_init.py"
LOAD_MODEL = Cite(RUNNER, "NPUModelRunner.load_model")

#: Per release: the vllm_ascend place that builds and loads the draft through vLLM's get_model (what a borrowed
#: row cites: vLLM's code decides from there on).
GET_MODEL = {
    "0.11.0": Cite(PROPOSER, "EagleProposer.load_model"),
    "0.13.0": Cite(PROPOSER, "EagleProposer.load_model"),
    "0.18.0": Cite(PROPOSER, "SpecDecodeBaseProposer._get_model"),
    "0.23.0": Cite(BASE, "AscendSpecDecodeBaseProposer._get_model"),
    "0.23.0.post1": Cite(BASE, "AscendSpecDecodeBaseProposer._get_model"),
}

# ---------------------------------------------------------------- its own rows
#: (behaviour, since, read_to, value, source, cites[, origin]): what vllm_ascend's own code decides; with origin vLLM,
#: what it hands to the pinned vLLM release's code from the cited place (carried over: pinned that release).
_OWN: tuple[tuple[Any, ...], ...] = (
    # ======================== aux: the fields read, the runner
    ("aux_id_fields", "0.11.0", "0.18.0", (),
     (f"vllm-ascend {RUNNER} NPUModelRunner.load_model: set_aux_hidden_state_layers(get_eagle3_aux_hidden_state_"
      "layers()) (0.18.0: get_eagle3_default_aux_hidden_state_layers()), the target's defaults; the draft's "
      "eagle_aux_hidden_state_layer_ids are never read (vLLM 0.13.0 and 0.18.0, which these pin, read them) "
      "(0.11.0, 0.13.0, 0.18.0 read)"),
     (LOAD_MODEL,)),
    ("aux_id_fields", "0.23.0", None, ALL_FIELDS,
     (f"vllm-ascend 0.23.0 {RUNNER} NPUModelRunner.load_model: aux_layers = self._get_eagle3_aux_layers_from_config(), "
      "else the target's defaults; the method is vLLM 0.23.0's, inherited (v1/worker/gpu_model_runner.py "
      "GPUModelRunner._get_eagle3_aux_layers_from_config: eagle_aux_hidden_state_layer_ids, "
      "eagle_config.eagle_aux_hidden_state_layer_ids, dflash_config.target_layer_ids + 1) (0.23.0, 0.23.0.post1 read)"),
     (LOAD_MODEL, Cite(RUNNER, "NPUModelRunner._get_eagle3_aux_layers_from_config", absent=True)), "vllm"),
    ("aux_id_fields_other_mode", "0.11.0", "0.13.0", None,
     "vllm-ascend 0.11.0 / 0.13.0: one model runner (NPUModelRunner; no worker/v2)",
     (Cite("vllm_ascend/worker/v2", absent=True),)),
    ("aux_id_fields_other_mode", "0.18.0", "0.18.0", (TOP_FIELD,),
     ("vllm-ascend 0.18.0 worker/worker.py NPUWorker.init_device: VLLM_USE_V2_MODEL_RUNNER=1 builds worker/v2's "
      "runner on vLLM 0.18.0's model runner V2, whose v1/worker/gpu/spec_decode/eagle/eagle3_utils.py "
      "get_eagle3_aux_layers_from_config reads the top level only"),
     (Cite("vllm_ascend/worker/worker.py", "NPUWorker.init_device"),), "vllm"),
    ("aux_id_fields_other_mode", "0.23.0", None, None,
     ("vllm-ascend 0.23.0 worker/worker.py NPUWorker.__init__: 'VLLM_USE_V2_MODEL_RUNNER is not supported on vllm "
      "0.23.0; falling back to v1 model runner': one model runner reads aux ids (0.23.0, 0.23.0.post1 read)"),
     (Cite("vllm_ascend/worker/worker.py", "NPUWorker.__init__"),)),
    # ======================== vocab: d2t and draft_vocab_size (0.23.0's own __init__ patch and sampler)
    ("d2t_present", "0.23.0", None, "offsets",
     (f"vllm-ascend 0.23.0 {BASE} AscendSpecDecodeBaseProposer.compute_draft_token_ids: eagle3 samples the draft "
      "vocab's argmax, then adds draft_id_to_target_id[token] (0.23.0, 0.23.0.post1 read)"),
     (Cite(BASE, "AscendSpecDecodeBaseProposer.compute_draft_token_ids"),)),
    ("d2t_full_vocab", "0.23.0", None, "offsets",
     (f"vllm-ascend 0.23.0 {INIT_PATCH} _patched_eagle3_llama_init replaces vLLM's Eagle3LlamaForCausalLM.__init__: "
      "draft_id_to_target_id is always a parameter of draft_vocab_size zeros"),
     (Cite(INIT_PATCH, "_patched_eagle3_llama_init"),)),
    ("draft_vocab_size_missing", "0.23.0", None, "vocab_size",
     f"vllm-ascend 0.23.0 {INIT_PATCH} _patched_eagle3_llama_init: draft_vocab_size None -> vocab_size",
     (Cite(INIT_PATCH, "_patched_eagle3_llama_init"),)),
    ("draft_vocab_size_null", "0.23.0", None, "vocab_size",
     f"vllm-ascend 0.23.0 {INIT_PATCH} _patched_eagle3_llama_init: getattr(config, 'draft_vocab_size', None) is None",
     (Cite(INIT_PATCH, "_patched_eagle3_llama_init"),)),
    # ======================== sharing: embed_tokens and lm_head (its own proposer)
    ("embed_source", "0.11.0", "0.11.0", "target-always",
     (f"vllm-ascend 0.11.0 {PROPOSER} EagleProposer.load_model: at PP == 1 self.model.model.embed_tokens = "
      "model.model.embed_tokens, whatever the draft shipped (vLLM 0.11.0: only when the shapes match)"),
     (Cite(PROPOSER, "EagleProposer.load_model"),)),
    ("embed_source", "0.13.0", "0.13.0", "target-if-absent-or-equal",
     f"vllm-ascend 0.13.0 {PROPOSER} EagleProposer.load_model: has_own_embed_tokens, else torch.equal with the target's",
     (Cite(PROPOSER, "EagleProposer.load_model"),)),
    ("embed_source", "0.18.0", "0.18.0", "target-if-absent-or-equal",
     f"vllm-ascend 0.18.0 {PROPOSER} SpecDecodeBaseProposer._maybe_share_embeddings: the same rule",
     (Cite(PROPOSER, "SpecDecodeBaseProposer._maybe_share_embeddings"),)),
    ("embed_source", "0.23.0", None, "target-if-absent-or-equal",
     f"vllm-ascend 0.23.0 {BASE} AscendSpecDecodeBaseProposer._maybe_share_embeddings: the same rule",
     (Cite(BASE, "AscendSpecDecodeBaseProposer._maybe_share_embeddings"),)),
    ("embed_width_check", "0.11.0", "0.11.0", "target-width",
     f"vllm-ascend 0.11.0 {PROPOSER} EagleProposer.load_model: the target's embed_tokens, no width check",
     (Cite(PROPOSER, "EagleProposer.load_model"),)),
    ("embed_width_check", "0.13.0", "0.13.0", "target-width",
     (f"vllm-ascend 0.13.0 {PROPOSER} EagleProposer.load_model: shared whenever the checkpoint has no embed_tokens, "
      "whatever the width"),
     (Cite(PROPOSER, "EagleProposer.load_model"),)),
    ("embed_width_check", "0.18.0", "0.18.0", "target-width",
     f"vllm-ascend 0.18.0 {PROPOSER} SpecDecodeBaseProposer._maybe_share_embeddings: no width check",
     (Cite(PROPOSER, "SpecDecodeBaseProposer._maybe_share_embeddings"),)),
    ("embed_width_check", "0.23.0", None, "target-width",
     f"vllm-ascend 0.23.0 {BASE} AscendSpecDecodeBaseProposer._maybe_share_embeddings: no width check",
     (Cite(BASE, "AscendSpecDecodeBaseProposer._maybe_share_embeddings"),)),
    ("lm_head_source", "0.11.0", "0.13.0", "draft",
     (f"vllm-ascend {PROPOSER} EagleProposer.load_model: the target's lm_head only for method eagle, never for "
      "eagle3 (vLLM 0.11.0 shares a same-shape one, 0.13.0 an absent or equal one) (0.11.0, 0.13.0 read)"),
     (Cite(PROPOSER, "EagleProposer.load_model"),)),
    ("lm_head_source", "0.18.0", "0.18.0", "draft",
     f"vllm-ascend 0.18.0 {PROPOSER} SpecDecodeBaseProposer._maybe_share_lm_head: only for method eagle",
     (Cite(PROPOSER, "SpecDecodeBaseProposer._maybe_share_lm_head"),)),
    ("lm_head_source", "0.23.0", None, "draft",
     (f"vllm-ascend 0.23.0 {BASE} AscendSpecDecodeBaseProposer._maybe_share_lm_head: only for methods eagle and "
      "dflash, never eagle3 (0.23.0, 0.23.0.post1 read)"),
     (Cite(BASE, "AscendSpecDecodeBaseProposer._maybe_share_lm_head"),)),
    # ======================== serving: the draft's dtype
    ("draft_dtype", "0.11.0", "0.11.0", "target",
     ("vllm-ascend 0.11.0 patch/platform/patch_config.py __post_init__ replaces SpeculativeConfig.__post_init__: "
      "draft ModelConfig(dtype=self.target_model_config.dtype)"),
     (Cite("vllm_ascend/patch/platform/patch_config.py", "__post_init__"),)),
)


def _own_spans() -> list[BehaviourSpan]:
    out = []
    for name, since, read_to, value, source, cites, *origin in _OWN:
        # a row whose rule is the pinned vLLM's code, called from the cited vllm_ascend place: carried over
        out.append(BehaviourSpan(name, since, read_to, value, source, cites, origin=origin[0] if origin else None,
                                 pinned=VLLM_PIN[since] if origin else None))
    return out


def _vllm_span(behaviour: str, release: str) -> BehaviourSpan:
    """vLLM's row for ``behaviour`` in force at ``release`` (the latest start at or below it; a later span of one
    start wins, as in vLLM's table)."""
    held = [s for s in vllm.SPANS if s.behaviour == behaviour and Version(s.since) <= Version(release)]
    return max(held, key=lambda s: Version(s.since))


def _covered(behaviour: str, release: str, own: list[BehaviourSpan]) -> bool:
    """Whether one of vLLM-Ascend's own rows holds ``behaviour`` at ``release``."""
    v = Version(release)
    return any(s.behaviour == behaviour and Version(s.since) <= v
               and (s.read_to is None or v <= Version(s.read_to)) for s in own)


def _carried(own: list[BehaviourSpan]) -> list[BehaviourSpan]:
    """Every behaviour its own code leaves to vLLM: vLLM's row at the pinned release, one span per release, origin
    vLLM and pinned that release, citing the vllm_ascend place that hands the draft to vLLM's get_model."""
    names = sorted({s.behaviour for s in vllm.SPANS})
    out = []
    for name in names:
        for release in RELEASES:
            if _covered(name, release, own):
                continue
            pin = VLLM_PIN[release]
            row = _vllm_span(name, pin)
            source = (f"as vLLM {pin} (pinned by vllm-ascend {release}; its {GET_MODEL[release].key} builds the draft "
                      f"with vLLM's get_model and classes): {row.source}")
            out.append(BehaviourSpan(name, release, release, row.value, source, (GET_MODEL[release],),
                                     row.unmodelled, origin="vllm", pinned=pin))
    return out


_OWN_SPANS = _own_spans()
SPANS: list[BehaviourSpan] = sorted(_OWN_SPANS + _carried(_OWN_SPANS),
                                    key=lambda s: (s.behaviour, Version(s.since)))

# ---------------------------------------------------------------- its rows in the cross-engine tables
#: Its draft class: vLLM's, built by vLLM's get_model (knowledge.draft_classes.CLASSES).
DRAFT_CLASSES = (
    DraftClass(NAME, "Eagle3LlamaForCausalLM", LLAMA, (), LLAMA_COUNT,
               ("vLLM's model_executor/models/llama_eagle3.py Eagle3LlamaForCausalLM at the pinned release (0.23.0: "
                f"__init__ replaced by {INIT_PATCH} _patched_eagle3_llama_init, the same parameters)")),
)
_REG = "vLLM's model_executor/models/registry.py at the pinned release (vllm-ascend builds through get_model)"
#: Which class each draft architecture builds (knowledge.draft_classes.REGISTRY).
REGISTRY_ROWS = tuple(
    (arch, TableRow("0.11.0", "Eagle3LlamaForCausalLM", f"{_REG}: {arch} -> Eagle3LlamaForCausalLM",
                    cites=(Cite(PROPOSER),)))
    for arch in ("Eagle3LlamaForCausalLM", "LlamaForCausalLMEagle3"))
#: It reads architectures (knowledge.draft_classes.ARCHITECTURE_READ).
ARCHITECTURE_READ = (
    TableRow("0.11.0", True, f"{_REG}: the architecture selects the class",
             cites=(Cite(PROPOSER),)),
)
#: Its KV-cache grouping (knowledge.runtime.KV_TABLE): vLLM's kv_cache_utils at the pinned release.
KV_ROWS = (
    TableRow("0.11.0", UNIFORM_TYPE_ELSE_DIVISIBLE,
             ("vLLM's v1/core/kv_cache_utils.py at the pinned release (0.11.0-0.23.0): vllm-ascend's NPUModelRunner "
              "subclasses vLLM's (0.13.0 on) and groups the draft's layers with the target's"),
             cites=(LOAD_MODEL,)),
)
#: How its facts are known (knowledge.confirmation).
CONFIRMATION = (
    Confirmation(NAME, "0.11.0-0.23.0.post1", "every release with an EAGLE-3 path (wheels; 0.23.0.post1's sdist)",
                 f"{NO}: needs torch-npu and CANN", f"{NO}: NPUs only", f"{NO}: NPUs only",
                 "docs/engines.md (vLLM-Ascend)"),
)
#: Its target capture rows: the runner's set_aux_hidden_state_layers on vLLM's Llama-family classes.
CAPTURE_ROWS: tuple[CaptureEntry, ...] = (
    CaptureEntry(NAME, "0.11.0", "llama", CAPTURES,
                 (f"vllm-ascend {RUNNER} NPUModelRunner.load_model calls set_aux_hidden_state_layers on the target; "
                  "vLLM's models/llama.py (Llama, Qwen2, Qwen3: SupportsEagle3) capture at the pinned release"),
                 ("LlamaForCausalLM", "Qwen2ForCausalLM", "Qwen3ForCausalLM"),
                 (LOAD_MODEL,)),
    CaptureEntry(NAME, "0.13.0", "llama", CAPTURES,
                 (f"vllm-ascend {RUNNER} NPUModelRunner.load_model calls set_aux_hidden_state_layers on the target; "
                  "vLLM's models/qwen3_moe.py Qwen3MoeForCausalLM (SupportsEagle3 from vLLM 0.11.1; the 0.11.0 that "
                  "vllm-ascend 0.11.0 pins lacks it) captures at the pinned release; no vllm_ascend model replaces it "
                  "(0.13.0-0.23.0 read: only its attention forward is patched)"),
                 ("Qwen3MoeForCausalLM",),
                 (LOAD_MODEL,)),
    CaptureEntry(NAME, "0.23.0", "llama", REFUSED,
                 (f"vllm-ascend {BASE} AscendSpecDecodeBaseProposer.load_model: a multimodal target outside its "
                  "image-token list (Qwen2.5/3-VL, Qwen3.5, Step3p7, Pixtral, Kimi-K2.5) sets the draft's "
                  "image_token_index from model.config.image_token_index; Gemma4Config has only image_token_id: "
                  "AttributeError while loading the drafter (0.23.0 wheel, 0.23.0.post1 sdist read; the mapping "
                  "that adds Gemma4 is in no release)"),
                 ("Gemma4ForConditionalGeneration",),
                 (Cite(BASE, "AscendSpecDecodeBaseProposer.load_model"),)),
)

ENGINE = Engine(
    NAME, "vLLM-Ascend", RELEASES, lineage="vllm", behaviour_rows=tuple(SPANS), rank=22,
    tables=Tables(
        draft_classes=DRAFT_CLASSES,
        registry_rows=REGISTRY_ROWS,
        architecture_read=ARCHITECTURE_READ,
        kv_rows=KV_ROWS,
        confirmation=CONFIRMATION,
        capture_rows=CAPTURE_ROWS,
    ),
    loading=Loading(
        key_fix_strips_model_prefix=True,
        reads_speculators_geometry_as_written=True,
        draft_dtype_source=("vLLM's config/speculative.py SpeculativeConfig.__post_init__ at the pinned release "
                            "(0.11.0: vllm-ascend's patch/platform/patch_config.py): the target's dtype"),
        load_assert="vLLM's weight loaders at the pinned release",
    ),
)
