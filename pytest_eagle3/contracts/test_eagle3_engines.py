"""Engine contracts: what each selected engine version will do with the draft (``--eagle3-engine``).

Each contract reads one area of the load plan (``pytest_eagle3.engines.plan``) and fails with what the engine will
do, the evidence, the fix, and the plan itself. The plan is frozen and shared: its fixes were proven where it was
built (``verdict.settle.settle``), so no contract changes it and the verdicts do not depend on the order contracts
run in. Each asserts on the run's judgement (``verdict.assess_engine`` judges it, once, for every command).
"""

from __future__ import annotations

from pytest_eagle3.shell.contract import contract_class

TestEagle3Engine = contract_class(
    "TestEagle3Engine", "The engine contracts: what one engine version does with the draft when it loads it.")
