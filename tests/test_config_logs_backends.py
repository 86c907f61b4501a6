"""The small public pieces: config, logs, exceptions, backend registry."""

import gc
import logging

import pytest

import framegraph.config as config
from framegraph import exc, logs
from framegraph.backends import list_backends, lookup_backend, register_backend


def test_config_patch_restores_on_error_and_as_decorator():
    before = config.recompile_limit
    with pytest.raises(KeyError):
        with config.patch(recompile_limit=2):
            assert config.recompile_limit == 2
            raise KeyError
    assert config.recompile_limit == before

    @config.patch(strict=True)
    def inner():
        assert config.strict is True
        raise ValueError("boom")
    with pytest.raises(ValueError):
        inner()
    assert config.strict is False


def test_config_rejects_unknown_keys_with_near_matches_and_bad_values():
    with pytest.raises(AttributeError, match="did you mean recompile_limit"):
        config.patch(recompile_limt=3)
    with pytest.raises(AttributeError, match="no setting 'nonsense'"):
        config.nonsense = 1
    with pytest.raises(ValueError, match="at least 1"):
        config.recompile_limit = 0
    with pytest.raises(TypeError, match="must be int"):
        config.patch(recompile_limit="8")
    with pytest.raises(TypeError, match="must be int"):
        config.patch(recompile_limit=True)
    assert config.recompile_limit == 8


def test_logs_prefix_every_line_with_the_compile_bracket(caplog):
    logs.set_logs("bytecode", guards=True)
    previous = logs.set_compile_id(logs.CompileId(1, 0, 2))
    try:
        with caplog.at_level(logging.INFO, logger="framegraph"):
            logs.log("bytecode", "first\nsecond")
            logs.log("graph_code", "not enabled")
        assert caplog.messages == ["[1/0_2] first\n[1/0_2] second"]
    finally:
        logs.set_compile_id(previous)
        logs.set_logs()
    assert str(logs.CompileId(0, 3)) == "[0/3]"


def test_logs_reject_unknown_artifacts_listing_known_ones():
    with pytest.raises(ValueError, match="bytcode.*known: bytecode"):
        logs.set_logs("bytcode")


def test_unsupported_carries_catalog_reason_and_rejects_unknown_types():
    err = exc.Unsupported("Attempted to call function marked as skipped", "builtin print")
    assert err.gb_type == "Attempted to call function marked as skipped"
    assert "print" in str(err) and err.hints and "Explanation:" in str(err)
    with pytest.raises(exc.InternalError):
        exc.Unsupported("no such type", "x")


def test_backend_registry():
    assert {"eager", "aot_eager", "inductor"} <= set(list_backends())
    with pytest.raises(exc.FramegraphError, match="unknown backend 'nope'.*aot_eager.*eager.*inductor"):
        lookup_backend("nope")

    def my_backend(gm, example_inputs):
        return gm.forward
    assert lookup_backend(my_backend) is my_backend
    register_backend(my_backend, name="test_registry_backend")
    assert lookup_backend("test_registry_backend") is my_backend
    with pytest.raises(TypeError, match="must be callable"):
        register_backend(42)


def _gc_recording_backend(seen: list):
    def backend(gm, example_inputs):
        seen.append(gc.isenabled())
        return gm.forward
    return backend


@pytest.mark.parametrize("outcome", ["compiled", "backend_error", "fullgraph_error", "user_disabled", "switched_off"])
def test_the_gc_is_paused_only_while_compiling_and_always_restored(outcome):
    import torch

    import framegraph

    seen: list = []
    backend = _gc_recording_backend(seen)

    def f(x):
        return x.sin() + 1

    def breaks(x):
        y = x.cos()
        print("", end="")
        return y + 1

    x = torch.ones(3)
    framegraph.reset()
    was_enabled = gc.isenabled()
    try:
        if outcome == "user_disabled":
            gc.disable()
        if outcome == "fullgraph_error":
            with pytest.raises(exc.Unsupported):
                framegraph.compile(breaks, backend=backend, fullgraph=True)(x)
        elif outcome == "backend_error":
            with config.patch(strict=False):
                def fails(gm, example_inputs):
                    seen.append(gc.isenabled())
                    raise ZeroDivisionError("backend bug")
                with pytest.raises(exc.BackendCompilerFailed):
                    framegraph.compile(f, backend=fails)(x)
        elif outcome == "switched_off":
            with config.patch(pause_gc_during_compile=False):
                assert torch.equal(framegraph.compile(f, backend=backend)(x), f(x))
        else:
            assert torch.equal(framegraph.compile(f, backend=backend)(x), f(x))
        after = gc.isenabled()
    finally:
        if was_enabled:
            gc.enable()
        framegraph.reset()
    # Paused inside the compile unless switched off; afterwards exactly as the user left it.
    assert seen == ([] if outcome == "fullgraph_error" else [outcome == "switched_off"])
    assert after is (outcome != "user_disabled")
