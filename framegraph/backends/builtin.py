"""The built-in backends. Each imports what it needs only when first used."""

from __future__ import annotations

from . import register_backend


@register_backend
def eager(gm, example_inputs):
    # gm.forward skips nn.Module.__call__, which costs about 2 us per call and adds nothing here.
    return gm.forward


def _boxed_forward(gm, example_inputs):
    from torch._functorch._aot_autograd.utils import make_boxed_func

    return make_boxed_func(gm.forward)


@register_backend
def aot_eager(gm, example_inputs):
    from torch._functorch.aot_autograd import aot_module_simplified

    return aot_module_simplified(gm, example_inputs, fw_compiler=_boxed_forward,
                                 bw_compiler=_boxed_forward)


# torch.compile's name for the same thing: AOTAutograd's default partition, no code generation.
register_backend(aot_eager, name="aot_eager_default_partitioner")


@register_backend
def aot_eager_decomp_partition(gm, example_inputs):
    # aot_eager with what inductor changes before its code generation (its decompositions and
    # its min-cut partition of forward and backward): it tells a bug in those apart from one in
    # inductor's kernels. The effect-token setting is the one torch.compile uses for it.
    import functools

    from torch._functorch import config as functorch_config
    from torch._functorch.aot_autograd import aot_module_simplified
    from torch._functorch.partitioners import min_cut_rematerialization_partition
    from torch._inductor.compile_fx import select_decomp_table

    with functorch_config.patch(unlift_effect_tokens=True):
        return aot_module_simplified(
            gm, example_inputs, fw_compiler=_boxed_forward, bw_compiler=_boxed_forward,
            decompositions=select_decomp_table(),
            partition_fn=functools.partial(min_cut_rematerialization_partition, compiler="inductor"))


@register_backend
def inductor(gm, example_inputs, config_patches: dict | None = None):
    """torch's compiler; `config_patches` are inductor settings for this graph (torch.compile's
    `mode` and `options`, cli/routing.py)."""
    from torch._inductor.compile_fx import compile_fx

    from .inductor_probes import remember_probes

    remember_probes()
    return compile_fx(gm, example_inputs, config_patches=config_patches)


# Inductor writes a non-tensor attribute of the graph (a torch.Generator) into its generated
# module as a pickled copy: draws would advance the copy, not the program's generator. Such
# an object is not handed to it (variables/rng.py).
inductor.copies_graph_attributes = True
