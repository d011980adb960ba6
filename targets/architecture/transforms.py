"""Model transforms on a torch module: exact rewrites and training-free approximations.

Every transform works on a deep copy and returns `(module, Applied)`: the new module and what it
changed, or why nothing applied. Exact rewrites (BatchNorm folding, dropping no-op layers, zero
channel padding) compute the same function; approximations (SVD low-rank, L1-norm channel
pruning) change it, so their callers gate them on fidelity.
"""

from __future__ import annotations

import copy
import math
import operator
from dataclasses import dataclass, field
from typing import Any, Callable

import torch
from torch import fx, nn
from torch.nn import functional as F


class NotApplicableError(Exception):
    """The transform cannot rewrite this model; the message says why, in words a user can act on."""


@dataclass
class Applied:
    """What a transform changed: one line per rewritten layer, and the layers it left alone, with why."""

    changed: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)

    @property
    def any(self) -> bool:
        """Whether the transform changed anything."""
        return bool(self.changed)


def check_transformable(module: nn.Module) -> None:
    """Raise NotApplicableError for modules the transforms cannot rewrite: TorchScript, tied weights."""
    if isinstance(module, torch.jit.ScriptModule):
        raise NotApplicableError("the model is TorchScript: its layers cannot be rewritten in Python "
                            "(plan the Python model or a .pt2 export of it)")
    seen: dict[int, str] = {}
    for name, param in module.named_parameters(remove_duplicate=False):
        if id(param) in seen and seen[id(param)] != name:
            raise NotApplicableError(f"tied weights: {seen[id(param)]} and {name} share one tensor, and "
                                "rewriting one layer would untie them")
        seen[id(param)] = name


def trace(module: nn.Module) -> fx.GraphModule:
    """A symbolic trace of a copy of `module`; NotApplicableError when Python control flow prevents it."""
    check_transformable(module)
    copied = copy.deepcopy(module).eval()
    try:
        return fx.symbolic_trace(copied)
    except Exception as exc:  # noqa: BLE001 - tracing custom modules fails in many ways
        raise NotApplicableError(f"the model's forward cannot be traced into a graph ({type(exc).__name__}: "
                            f"{str(exc).splitlines()[0][:160]}): custom modules with data-dependent "
                            "control flow are left as they are") from exc


def _module(gm: fx.GraphModule, node: fx.Node) -> nn.Module | None:
    return gm.get_submodule(str(node.target)) if node.op == "call_module" else None


def _set_module(root: nn.Module, name: str, new: nn.Module) -> None:
    parent, _, leaf = name.rpartition(".")
    setattr(root.get_submodule(parent) if parent else root, leaf, new)


def _finish(gm: fx.GraphModule) -> fx.GraphModule:
    gm.graph.eliminate_dead_code()
    gm.graph.lint()
    gm.delete_all_unused_submodules()
    gm.recompile()
    return gm


# ---- exact: fold BatchNorm into the conv or linear layer before it -------------------------------

def fold_batchnorm(module: nn.Module) -> tuple[nn.Module, Applied]:
    """Fold each eval-mode BatchNorm that directly follows a conv or linear layer into its weights."""
    gm = trace(module)
    done = Applied()
    for node in list(gm.graph.nodes):
        bn = _module(gm, node)
        if not isinstance(bn, (nn.BatchNorm1d, nn.BatchNorm2d)):
            continue
        source = node.args[0] if node.args else None
        layer = _module(gm, source) if isinstance(source, fx.Node) else None
        if not isinstance(layer, (nn.Conv2d, nn.Linear)):
            what = source.target if isinstance(source, fx.Node) else "its input"
            done.skipped.append(f"{node.target}: follows {what}, not a conv or linear layer")
            continue
        assert isinstance(source, fx.Node)
        if len(source.users) != 1:
            done.skipped.append(f"{node.target}: {source.target}'s output is also used elsewhere")
            continue
        if sum(1 for n in gm.graph.nodes if n.op == "call_module" and n.target == source.target) > 1:
            done.skipped.append(f"{node.target}: {source.target} is called more than once")
            continue
        if bn.running_mean is None or bn.running_var is None:
            done.skipped.append(f"{node.target}: no running statistics to fold")
            continue
        _set_module(gm, str(source.target), _folded(layer, bn))
        node.replace_all_uses_with(source)
        gm.graph.erase_node(node)
        done.changed.append(f"{node.target} folded into {source.target}")
    return _finish(gm), done


def _folded(layer: nn.Conv2d | nn.Linear, bn: nn.BatchNorm1d | nn.BatchNorm2d) -> nn.Module:
    assert bn.running_mean is not None and bn.running_var is not None
    scale = (bn.weight if bn.weight is not None else torch.ones_like(bn.running_mean)) / torch.sqrt(
        bn.running_var + bn.eps)
    shift = bn.bias if bn.bias is not None else torch.zeros_like(bn.running_mean)
    new = copy.deepcopy(layer)
    with torch.no_grad():
        shape = (-1,) + (1,) * (layer.weight.dim() - 1)
        new.weight.copy_(layer.weight * scale.reshape(shape))
        bias = layer.bias if layer.bias is not None else torch.zeros_like(bn.running_mean)
        new.bias = nn.Parameter((bias - bn.running_mean) * scale + shift)
    return new


# ---- exact: drop layers that do nothing at inference --------------------------------------------

_NO_OP_MODULES = (nn.Identity, nn.Dropout, nn.Dropout1d, nn.Dropout2d, nn.Dropout3d, nn.AlphaDropout)
_NO_OP_FUNCTIONS: tuple[Callable[..., Any], ...] = (F.dropout, F.dropout1d, F.dropout2d, F.dropout3d,
                                                    F.alpha_dropout, torch.dropout)


def drop_no_ops(module: nn.Module) -> tuple[nn.Module, Applied]:
    """Remove identity and dropout layers (dropout does nothing in eval mode)."""
    gm = trace(module)
    done = Applied()
    for node in list(gm.graph.nodes):
        layer = _module(gm, node)
        no_op = isinstance(layer, _NO_OP_MODULES) or (node.op == "call_function" and node.target in _NO_OP_FUNCTIONS)
        if not no_op or not node.args or not isinstance(node.args[0], fx.Node):
            continue
        node.replace_all_uses_with(node.args[0])
        gm.graph.erase_node(node)
        done.changed.append(f"{node.target if node.op == 'call_module' else node.name} removed")
    return _finish(gm), done


# ---- channel chains: a conv's output followed to the one layer that consumes its channels --------

# Per-channel layers that map 0 to 0, so zero-padded channels stay zero through them.
_ZERO_KEEPING_MODULES = (nn.ReLU, nn.ReLU6, nn.GELU, nn.SiLU, nn.Hardswish, nn.LeakyReLU, nn.Tanh, nn.Mish,
                         nn.MaxPool2d, nn.AvgPool2d, nn.Identity, nn.Dropout, nn.Dropout2d)
_ZERO_KEEPING_FUNCTIONS: tuple[Callable[..., Any], ...] = (
    F.relu, torch.relu, F.gelu, F.silu, F.relu6, F.hardswish, torch.tanh, F.max_pool2d, F.avg_pool2d,
    operator.getitem)
_GLOBAL_POOLS = (nn.AdaptiveAvgPool2d, nn.AdaptiveMaxPool2d)


@dataclass
class Chain:
    """A conv whose output channels reach exactly one consumer through per-channel layers only."""

    producer: str
    norms: list[str]
    consumer: str


def channel_chains(gm: fx.GraphModule) -> tuple[list[Chain], list[str]]:
    """Every conv whose channel count can change without touching anything else; and why others cannot."""
    chains, why_not = [], []
    calls: dict[str, int] = {}
    for node in gm.graph.nodes:
        if node.op == "call_module":
            calls[str(node.target)] = calls.get(str(node.target), 0) + 1
    for node in gm.graph.nodes:
        conv = _module(gm, node)
        if not isinstance(conv, nn.Conv2d):
            continue
        name = str(node.target)
        if conv.groups != 1:
            why_not.append(f"{name}: grouped convolution (its channels are tied to its groups)")
            continue
        if calls[name] > 1:
            why_not.append(f"{name}: called more than once")
            continue
        chain, reason = _follow(gm, node, calls)
        if chain is None:
            why_not.append(f"{name}: {reason}")
        else:
            chains.append(chain)
    return chains, why_not


def _follow(gm: fx.GraphModule, start: fx.Node, calls: dict[str, int]) -> tuple[Chain | None, str]:
    norms: list[str] = []
    pooled = False
    cur = start
    while True:
        users = list(cur.users)
        if len(users) != 1:
            return None, (f"its output feeds {len(users)} operations (an addition or concatenation "
                          "would see different channels)" if users else "its output is the model's output")
        user = users[0]
        if user.args and user.args[0] is not cur:
            return None, f"{user.name} takes it as a second operand"
        layer = _module(gm, user)
        if isinstance(layer, nn.BatchNorm2d):
            if calls[str(user.target)] > 1:
                return None, f"{user.target} is called more than once"
            norms.append(str(user.target))
        elif isinstance(layer, _GLOBAL_POOLS) and _is_one(layer.output_size):
            pooled = True
        elif isinstance(layer, nn.Conv2d) and layer.groups == 1 and calls[str(user.target)] == 1:
            return Chain(str(start.target), norms, str(user.target)), ""
        elif isinstance(layer, nn.Linear) and pooled and calls[str(user.target)] == 1:
            return Chain(str(start.target), norms, str(user.target)), ""
        elif isinstance(layer, _ZERO_KEEPING_MODULES):
            pass
        elif user.op == "call_function" and user.target in _ZERO_KEEPING_FUNCTIONS:
            pass
        elif user.op in ("call_function", "call_method") and str(getattr(user.target, "__name__", user.target)) \
                == "flatten" and pooled:
            pass
        else:
            what = user.target if user.op == "call_module" else getattr(user.target, "__name__", user.target)
            return None, f"its output reaches {what}, which the transform cannot follow channel by channel"
        cur = user


def _is_one(size: Any) -> bool:
    return size == 1 or (isinstance(size, tuple) and all(s == 1 for s in size))


def _resize_chain(gm: fx.GraphModule, chain: Chain, keep: torch.Tensor | None, pad_to: int | None) -> None:
    """Keep the producer's channels `keep` (pruning), or pad them with zeros up to `pad_to` (alignment)."""
    conv = gm.get_submodule(chain.producer)
    assert isinstance(conv, nn.Conv2d)
    cout = conv.out_channels

    def take(t: torch.Tensor, dim: int, fill: float) -> torch.Tensor:
        if keep is not None:
            return t.index_select(dim, keep)
        assert pad_to is not None
        shape = list(t.shape)
        shape[dim] = pad_to - cout
        return torch.cat([t, torch.full(shape, fill, dtype=t.dtype)], dim=dim)

    size = len(keep) if keep is not None else pad_to
    assert size is not None
    with torch.no_grad():
        # Copies keep every other setting (stride, padding, eps...); only the channel side changes.
        new = copy.deepcopy(conv)
        new.out_channels = size
        _resized(new, "weight", take, 0, 0.0)
        _resized(new, "bias", take, 0, 0.0)
        _set_module(gm, chain.producer, new)
        for name in chain.norms:
            nb = copy.deepcopy(gm.get_submodule(name))
            assert isinstance(nb, nn.BatchNorm2d)
            nb.num_features = size
            # Padded channels get weight 0 and bias 0, so they stay exactly zero after the norm.
            _resized(nb, "running_mean", take, 0, 0.0)
            _resized(nb, "running_var", take, 0, 1.0)
            _resized(nb, "weight", take, 0, 0.0)
            _resized(nb, "bias", take, 0, 0.0)
            _set_module(gm, name, nb)
        consumer = copy.deepcopy(gm.get_submodule(chain.consumer))
        if isinstance(consumer, nn.Conv2d):
            consumer.in_channels = size
        else:
            assert isinstance(consumer, nn.Linear)
            consumer.in_features = size
        _resized(consumer, "weight", take, 1, 0.0)
        _set_module(gm, chain.consumer, consumer)


def _resized(layer: nn.Module, name: str, take: Callable[[torch.Tensor, int, float], torch.Tensor],
             dim: int, fill: float) -> None:
    """Replace the parameter or buffer `name` (when the layer has one) by its resized copy."""
    old = getattr(layer, name, None)
    if not isinstance(old, torch.Tensor):
        return
    value = take(old.detach(), dim, fill)
    if isinstance(old, nn.Parameter):
        setattr(layer, name, nn.Parameter(value, requires_grad=old.requires_grad))
    else:
        setattr(layer, name, value)


def align_channels(module: nn.Module, *, multiple: int = 8,
                   layers: list[str] | None = None) -> tuple[nn.Module, Applied]:
    """Pad conv output channels up to `multiple` with zero weights (exact); only `layers` when given."""
    gm = trace(module)
    chains, why_not = channel_chains(gm)
    done = Applied(skipped=list(why_not))
    for chain in chains:
        conv = gm.get_submodule(chain.producer)
        assert isinstance(conv, nn.Conv2d)
        if layers is not None and chain.producer not in layers:
            continue
        target = math.ceil(conv.out_channels / multiple) * multiple
        if target == conv.out_channels:
            continue
        before = conv.out_channels
        _resize_chain(gm, chain, None, target)
        done.changed.append(f"{chain.producer}: {before} -> {target} output channels (zeros), "
                            f"{chain.consumer} reads them")
    return _finish(gm), done


def prune_channels(module: nn.Module, *, ratio: float, multiple: int = 8) -> tuple[nn.Module, Applied]:
    """Remove `ratio` of each prunable conv's output channels, those with the smallest L1 weight norm.

    The kept count is rounded to `multiple` (never below it), so pruning does not misalign channels.
    """
    if not 0.0 < ratio < 1.0:
        raise ValueError(f"the pruning ratio must be between 0 and 1, got {ratio}")
    gm = trace(module)
    chains, why_not = channel_chains(gm)
    done = Applied(skipped=list(why_not))
    for chain in chains:
        conv = gm.get_submodule(chain.producer)
        assert isinstance(conv, nn.Conv2d)
        cout = conv.out_channels
        kept = max(multiple, int(round(cout * (1.0 - ratio) / multiple)) * multiple)
        if kept >= cout:
            done.skipped.append(f"{chain.producer}: {cout} channels, too few to prune at {ratio:.0%}")
            continue
        norms = conv.weight.detach().abs().flatten(1).sum(1)
        keep = torch.sort(torch.topk(norms, kept).indices).values
        _resize_chain(gm, chain, keep, None)
        done.changed.append(f"{chain.producer}: {cout} -> {kept} output channels")
    return _finish(gm), done


# ---- approximate: SVD low-rank factorisation of large linear and 1x1 conv layers ----------------

MIN_FACTOR_WEIGHTS = 16384  # smaller layers gain too little to be worth two calls


def lowrank_layers(module: nn.Module) -> list[tuple[str, nn.Module]]:
    """The linear and 1x1 conv layers large enough to factorise."""
    found = []
    for name, layer in module.named_modules():
        if isinstance(layer, nn.Linear):
            big = layer.in_features * layer.out_features
        elif isinstance(layer, nn.Conv2d) and layer.kernel_size == (1, 1) and layer.groups == 1 \
                and layer.padding in ((0, 0), 0):
            big = layer.in_channels * layer.out_channels
        else:
            continue
        if big >= MIN_FACTOR_WEIGHTS:
            found.append((name, layer))
    return found


def _pair(value: Any) -> tuple[int, int]:
    """A conv's stride (or similar) as the (h, w) pair the constructor's types ask for."""
    return (int(value[0]), int(value[1])) if isinstance(value, tuple) else (int(value), int(value))


def lowrank(module: nn.Module, *, fraction: float, min_saving: float = 0.2) -> tuple[nn.Module, Applied]:
    """Replace each large layer W (out x in) by two of rank r = fraction * min(in, out), from its SVD.

    A layer is factorised only where the two smaller layers save at least `min_saving` of its
    multiply-adds: r (in + out) <= (1 - min_saving) in out.
    """
    check_transformable(module)
    new_module = copy.deepcopy(module).eval()
    done = Applied()
    for name, layer in lowrank_layers(new_module):
        conv = isinstance(layer, nn.Conv2d)
        weight = layer.weight
        assert isinstance(weight, torch.Tensor)
        weight = weight.detach()
        out_dim, in_dim = weight.shape[0], weight.shape[1]
        rank = max(1, int(round(fraction * min(in_dim, out_dim))))
        if rank * (in_dim + out_dim) > (1.0 - min_saving) * in_dim * out_dim:
            done.skipped.append(f"{name}: rank {rank} of {in_dim}x{out_dim} would save under {min_saving:.0%}")
            continue
        u, s, vh = torch.linalg.svd(weight.reshape(out_dim, in_dim).double(), full_matrices=False)
        root = torch.sqrt(s[:rank])
        first_w = (root[:, None] * vh[:rank]).float()
        second_w = (u[:, :rank] * root[None, :]).float()
        first: nn.Module
        second: nn.Module
        if conv:
            first = nn.Conv2d(in_dim, rank, 1, stride=_pair(layer.stride), bias=False)
            second = nn.Conv2d(rank, out_dim, 1, bias=layer.bias is not None)
            first_w, second_w = first_w[:, :, None, None], second_w[:, :, None, None]
        else:
            first = nn.Linear(in_dim, rank, bias=False)
            second = nn.Linear(rank, out_dim, bias=layer.bias is not None)
        bias = layer.bias
        with torch.no_grad():
            first.weight = nn.Parameter(first_w)
            second.weight = nn.Parameter(second_w)
            if isinstance(bias, torch.Tensor):
                second.bias = nn.Parameter(bias.detach().clone())
        _set_module(new_module, name, nn.Sequential(first, second))
        kept = float((s[:rank] ** 2).sum() / (s ** 2).sum())
        done.changed.append(f"{name}: {in_dim}x{out_dim} -> rank {rank} ({kept:.1%} of the weight's energy)")
    return new_module, done
