"""The contract suite, collected by ``pytest --eagle3-ckpt=PATH`` (or ``--pyargs pytest_eagle3.contracts``)."""
