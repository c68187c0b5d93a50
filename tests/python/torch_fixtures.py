"""Fixtures the torch test files share, imported by name (`from torch_fixtures import
fresh_dynamo`): pytest uses a fixture a test module imports as if the module defined it."""
import pytest
import torch


@pytest.fixture(autouse=True)
def fresh_dynamo():
    """Each test traces from scratch: Dynamo's caches and recompile counts reset around it."""
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()
