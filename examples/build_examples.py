"""Rebuild the bundled examples deterministically: ``python examples/build_examples.py``.

tiny-target         a 8-layer Llama target (hidden 64, vocab 1024), random weights
speculators-draft   a good draft in speculators 0.9.0 layout (layers.0.*, embed_tokens, input-of aux ids)
sglang-draft        a good draft in SpecForge's SGLang export layout (midlayer.*, eagle_config output-of ids)
broken-d2t-draft    the speculators draft with absolute ids stored in d2t (fails vocab.map)
"""

from __future__ import annotations

import shutil
from pathlib import Path

from pytest_eagle3.testing.synth import SPECFORGE, SPECULATORS, SynthSpec, write_checkpoint, write_target

HERE = Path(__file__).resolve().parent
EXAMPLES = {
    "speculators-draft": SynthSpec(producer=SPECULATORS),
    "sglang-draft": SynthSpec(producer=SPECFORGE),
    "broken-d2t-draft": SynthSpec(producer=SPECULATORS).with_faults("d2t-absolute"),
}


def main() -> None:
    target = HERE / "tiny-target"
    shutil.rmtree(target, ignore_errors=True)
    write_target(SynthSpec(), target)
    for name, spec in EXAMPLES.items():
        shutil.rmtree(HERE / name, ignore_errors=True)
        write_checkpoint(spec, HERE / name)
    print("\n".join(sorted(p.name for p in HERE.iterdir() if p.is_dir())))


if __name__ == "__main__":
    main()
