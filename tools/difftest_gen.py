"""Random valid ONNX graphs for differential testing (NNSmith-style), used by tools/difftest.py.

`build(seed)` returns an onnx ModelProto and its input values: 2-60 nodes drawn from ops ge
supports, every shape valid by construction (broadcasting, conv/pool geometry, reshapes that
keep the element count, concats on matching dims, attention-shaped matmuls), with branches
and joins, initializers, Constant nodes and graph inputs mixed, and the patterns ge's passes
look for (conv->BN->relu, MatMul+Add, decomposed LayerNorm / GELU / attention, elementwise
chains, concat trees) plus near-misses (a BN output also read elsewhere, a MatMul+Add whose
bias broadcasts along rows).

Values stay where fp32 comparison means something: each tensor carries a magnitude bound
(`s`) and ops that could overflow get a rescale first; Log/Sqrt/Div/Pow/Acosh… read guarded
inputs (|x| + c, tanh(x) * 0.9); ops that are discontinuous (Floor, Round, comparisons,
ArgMax, TopK indices…) read only `exact` tensors — values that every correct implementation
computes bit-for-bit the same (inputs, constants, data movement, Relu/Abs/Max…) — so a
rounding difference elsewhere cannot flip them.
"""
from __future__ import annotations

import math

import numpy as np
import onnx
from onnx import TensorProto as TP
from onnx import helper as h
from onnx import numpy_helper

F, I64, I32, B = "f", "i64", "i32", "b"
ELEM = {F: TP.FLOAT, I64: TP.INT64, I32: TP.INT32, B: TP.BOOL}
MAX_ELEMS = 6144
MAX_NODES = 60


class T:
    """A tensor of the graph under construction."""

    __slots__ = ("name", "shape", "dt", "exact", "s", "uses")

    def __init__(self, name, shape, dt=F, exact=False, s=1.0):
        self.name, self.shape, self.dt, self.exact, self.s = name, tuple(int(d) for d in shape), dt, exact, s
        self.uses = 0

    @property
    def rank(self):
        return len(self.shape)

    @property
    def size(self):
        return int(np.prod(self.shape)) if self.shape else 1


class Skip(Exception):
    """A template that does not fit the current graph."""


class G:
    def __init__(self, seed: int, rng: np.random.Generator):
        self.seed, self.rng = seed, rng
        self.nodes, self.inits, self.inputs, self.vals = [], [], [], []
        self.pool: list[T] = []
        self.n = 0
        self.used_ops: set[str] = set()
        self.opset = int(rng.choice([13, 17, 18, 21, 23, 24], p=[0.12, 0.15, 0.2, 0.3, 0.13, 0.1]))
        self.forced_outputs: list[T] = []

    # ---- naming / construction -------------------------------------------------------
    def fresh(self, p="t"):
        self.n += 1
        return f"{p}{self.n}"

    def r(self):
        return float(self.rng.random())

    def ri(self, lo, hi):
        """Integer in [lo, hi]."""
        return int(self.rng.integers(lo, hi + 1))

    def ch(self, xs):
        return xs[int(self.rng.integers(0, len(xs)))]

    def room(self, k):
        return len(self.nodes) + k <= MAX_NODES

    def add_input(self, shape, scale=1.0, exact=True):
        name = self.fresh("in")
        v = (self.rng.standard_normal(shape) * scale).astype(np.float32)
        self.inputs.append(h.make_tensor_value_info(name, TP.FLOAT, list(shape)))
        self.vals.append(v)
        t = T(name, shape, F, exact=exact, s=3.5 * scale)
        self.pool.append(t)
        return t

    def const(self, arr, name=None, node_prob=0.25):
        """An initializer or (sometimes) a Constant node."""
        arr = np.asarray(arr)
        if arr.dtype == np.float64:
            arr = arr.astype(np.float32)
        name = name or self.fresh("c")
        if self.r() < node_prob and self.room(1):
            self.nodes.append(h.make_node("Constant", [], [name], value=numpy_helper.from_array(arr, name)))
            self.used_ops.add("Constant")
        else:
            self.inits.append(numpy_helper.from_array(arr, name))
        return name

    def fconst(self, shape, scale=1.0, exact=True, pool=False):
        v = (self.rng.standard_normal(shape) * scale).astype(np.float32)
        name = self.const(v)
        t = T(name, shape, F, exact=exact, s=3.5 * scale if v.size > 0 else 0.0)
        if pool:
            self.pool.append(t)
        return t

    def i64(self, vals):
        return self.const(np.asarray(vals, dtype=np.int64), node_prob=0.15)

    def node(self, op, ins, outs, **attrs):
        if not self.room(1):
            raise Skip()
        names = [i.name if isinstance(i, T) else i for i in ins]
        for i in ins:
            if isinstance(i, T):
                i.uses += 1
        self.nodes.append(h.make_node(op, names, [o.name if isinstance(o, T) else o for o in outs], **attrs))
        self.used_ops.add(op)
        for o in outs:
            if isinstance(o, T):
                self.pool.append(o)
        return outs[0] if len(outs) == 1 else outs

    def op(self, op, ins, shape, dt=F, exact=False, s=1.0, **attrs):
        """One node with one output of `shape`."""
        return self.node(op, ins, [T(self.fresh(), shape, dt, exact, s)], **attrs)

    # ---- picking operands --------------------------------------------------------------
    def pick(self, pred=lambda t: True, dt=F):
        c = [t for t in self.pool if t.dt == dt and pred(t)]
        if not c:
            raise Skip()
        # Mostly the newest tensors (long chains), sometimes older ones (branches, residuals).
        if self.r() < 0.55:
            return c[-1] if self.r() < 0.6 else c[max(0, len(c) - 1 - self.ri(0, 2))]
        return self.ch(c)

    def bounded(self, t, lim=4.0):
        """`t`, rescaled into [-lim, lim] when its bound is larger (a Mul by a constant, or Tanh)."""
        if t.s <= lim:
            return t
        if self.r() < 0.5:
            return self.op("Tanh", [t], t.shape, s=1.0)
        k = np.float32(lim / t.s)
        return self.op("Mul", [t, self.const(np.array(k, dtype=np.float32))], t.shape, s=lim)

    def positive(self, t, lo=0.5):
        """|t| + lo (>= lo), or sigmoid(t) + lo."""
        if self.r() < 0.7:
            a = self.op("Abs", [t], t.shape, exact=t.exact, s=t.s)
        else:
            a = self.op("Sigmoid", [t], t.shape, s=1.0)
        return self.op("Add", [a, self.const(np.array(lo, dtype=np.float32))], t.shape, s=a.s + lo)

    def unit(self, t, k=0.9):
        """tanh(t) * k, inside (-k, k)."""
        a = self.op("Tanh", [t], t.shape, s=1.0)
        return self.op("Mul", [a, self.const(np.array(k, dtype=np.float32))], t.shape, s=k)

    def bshape(self, shape):
        """A shape that broadcasts to `shape` (dims dropped from the front or set to 1)."""
        r = self.rng
        shape = list(shape)
        k = int(r.integers(0, len(shape) + 1)) if shape else 0
        sub = shape[len(shape) - k:]
        sub = [d if r.random() < 0.6 else 1 for d in sub]
        return tuple(sub)

    def axes_arg(self, axes, attrs, ins, since):
        """Axes as an attribute (opset < since) or an int64 input."""
        if self.opset >= since:
            ins.append(self.i64(axes))
        else:
            attrs["axes"] = list(axes)


# ---------------------------------------------------------------------------------------
# templates: each adds one or more nodes, or raises Skip
# ---------------------------------------------------------------------------------------

SAFE_UNARY = {  # op: (needs bound, exact-preserving, output bound fn)
    "Relu": (None, True, lambda s: s),
    "Abs": (None, True, lambda s: s),
    "Neg": (None, True, lambda s: s),
    "Sigmoid": (None, False, lambda s: 1.0),
    "Tanh": (None, False, lambda s: 1.0),
    "Erf": (None, False, lambda s: 1.0),
    "Softsign": (None, False, lambda s: 1.0),
    "Atan": (None, False, lambda s: 1.6),
    "Sin": (None, False, lambda s: 1.0),
    "Cos": (None, False, lambda s: 1.0),
    "Asinh": (None, False, lambda s: math.asinh(s) + 0.1),
    "Exp": (4.0, False, lambda s: math.exp(s)),
    "Softplus": (8.0, False, lambda s: s + 1),
    "Sinh": (4.0, False, lambda s: math.sinh(s) + 0.1),
    "Cosh": (4.0, False, lambda s: math.cosh(s)),
    "Elu": (None, False, lambda s: s),
    "Selu": (None, False, lambda s: 1.76 * s),
    "Celu": (None, False, lambda s: s),
    "LeakyRelu": (None, False, lambda s: s),
    "HardSigmoid": (None, False, lambda s: 1.0),
    "HardSwish": (None, False, lambda s: s),
    "Mish": (None, False, lambda s: s),
    "ThresholdedRelu": (None, True, lambda s: s),
    "Shrink": (None, False, lambda s: s),
    "Identity": (None, True, lambda s: s),
    "Dropout": (None, True, lambda s: s),
    "Gelu": (None, False, lambda s: s),
}
DISCONT = ["Floor", "Ceil", "Round", "Sign"]


def t_unary(g: G):
    op = g.ch(list(SAFE_UNARY))
    if (op == "Gelu" and g.opset < 20) or (op in ("Mish", "HardSwish") and g.opset < 18 - 4 * (op == "HardSwish")):
        raise Skip()
    need, ex, fs = SAFE_UNARY[op]
    x = g.pick()
    if need is not None:
        x = g.bounded(x, need)
    attrs = {}
    if op in ("Elu", "Celu"):
        attrs["alpha"] = float(g.ch([0.5, 1.0, 1.3]))
    elif op == "LeakyRelu":
        attrs["alpha"] = float(g.ch([0.01, 0.2]))
    elif op == "HardSigmoid":
        attrs.update(alpha=0.25, beta=0.4)
    elif op == "ThresholdedRelu":
        attrs["alpha"] = 0.5
    elif op == "Shrink":
        attrs.update(lambd=0.4, bias=float(g.ch([0.0, 0.2])))
    elif op == "Gelu" and g.r() < 0.5:
        attrs["approximate"] = "tanh"
    return g.op(op, [x], x.shape, exact=ex and x.exact, s=fs(x.s), **attrs)


def t_guarded_unary(g: G):
    """Ops with a domain: Log/Sqrt/Reciprocal on |x|+c, Asin/Acos/Atanh on tanh*0.9, Acosh on
    1+|x|, Tan on tanh*1.2."""
    op = g.ch(["Log", "Sqrt", "Reciprocal", "Asin", "Acos", "Atanh", "Acosh", "Tan"])
    x = g.pick()
    if op in ("Log", "Sqrt", "Reciprocal"):
        x = g.positive(g.bounded(x, 50.0), lo=float(g.ch([0.5, 1.0])))
        s = {"Log": math.log(x.s + 1), "Sqrt": math.sqrt(x.s), "Reciprocal": 2.0}[op]
    elif op == "Acosh":
        x = g.positive(g.bounded(x, 50.0), lo=1.2)
        s = math.acosh(x.s) + 0.1
    else:
        x = g.unit(x, 1.2 if op == "Tan" else 0.9)
        s = 3.0
    return g.op(op, [x], x.shape, s=s)


def t_discont(g: G):
    """Floor/Ceil/Round/Sign/IsNaN/IsInf/Hardmax/Cast-to-f16 on an exact tensor."""
    x = g.pick(lambda t: t.exact)
    op = g.ch(DISCONT + ["IsNaN", "IsInf", "Hardmax", "CastF16", "Mod"])
    if op in ("IsNaN", "IsInf"):
        c = g.op(op, [x], x.shape, dt=B, exact=True)
        return g.op("Where", [c, g.const(np.array(0.0, dtype=np.float32)), x], x.shape, exact=True, s=x.s)
    if op == "Hardmax":
        if x.rank < 1 or (g.opset < 13):
            raise Skip()
        return g.op("Hardmax", [x], x.shape, exact=True, s=1.0, axis=g.ri(-x.rank, x.rank - 1))
    if op == "CastF16":
        x = g.bounded(x, 100.0) if not x.exact else x
        hlf = g.op("Cast", [x], x.shape, dt="f16", exact=True, to=TP.FLOAT16)
        return g.op("Cast", [hlf], x.shape, exact=True, s=x.s, to=TP.FLOAT)
    if op == "Mod":
        d = g.ch([0.75, 1.5, -2.0])
        return g.op("Mod", [x, g.const(np.array(d, dtype=np.float32))], x.shape, exact=True, s=abs(d), fmod=1)
    return g.op(op, [x], x.shape, exact=True, s=x.s + 1)


def t_binary(g: G):
    op = g.ch(["Add", "Add", "Sub", "Mul", "Mul", "Div", "Max", "Min", "Pow", "PRelu", "Mean", "Sum"])
    a = g.pick()
    # The other operand: a tensor of the pool that broadcasts with `a`, or a constant.
    others = [t for t in g.pool if t.dt == F and t is not a and _bcast(t.shape, a.shape) == a.shape]
    if others and g.r() < 0.5:
        b = g.ch(others)
    elif g.r() < 0.15:
        b = a  # x op x
    else:
        b = g.fconst(g.bshape(a.shape), scale=float(g.ch([0.5, 1.0])))
    if g.r() < 0.2:
        a, b = b, a
    shape = _bcast(a.shape, b.shape)
    if shape is None or int(np.prod(shape)) > MAX_ELEMS:
        raise Skip()
    ex = a.exact and b.exact and op in ("Max", "Min")
    if op == "Div":
        # The divisor stays >= 0.5 away from zero: |b| + 0.5, or sigmoid(b) + 0.5.
        b = g.positive(b, lo=0.5)
        return g.op("Div", [a, b], shape, s=a.s * 2)
    if op == "Pow":
        base = g.positive(g.bounded(a, 3.0), lo=0.5)
        if g.r() < 0.6:
            e = g.const(np.array(g.ch([0.5, 2.0, 3.0, -1.0, 1.5]), dtype=np.float32))
            es = 3.0
        else:
            e = g.unit(b, 2.0)
            es = 2.0
        shape = _bcast(base.shape, e.shape if isinstance(e, T) else ())
        return g.op("Pow", [base, e], shape, s=max(4.0, (base.s + 1) ** es))
    if op == "PRelu":
        slope = g.fconst(_prelu_slope(g, a.shape), scale=0.3)
        return g.op("PRelu", [a, slope], a.shape, s=a.s)
    if op in ("Mean", "Sum"):
        ins = [a, b] + ([g.pick(lambda t: _bcast(t.shape, shape) == shape)] if g.r() < 0.4 else [])
        return g.op(op, ins, shape, s=sum(t.s for t in ins))
    s = {"Add": a.s + b.s, "Sub": a.s + b.s, "Mul": a.s * b.s, "Max": max(a.s, b.s), "Min": max(a.s, b.s)}[op]
    out = g.op(op, [a, b], shape, exact=ex, s=s)
    return out


def _prelu_slope(g, shape):
    if len(shape) >= 3 and g.r() < 0.7:
        return (shape[1],) + (1,) * (len(shape) - 2)
    return g.bshape(shape)


def _bcast(a, b):
    try:
        return tuple(np.broadcast_shapes(tuple(a), tuple(b)))
    except ValueError:
        return None


def t_compare_where(g: G):
    a = g.pick(lambda t: t.exact)
    same = [t for t in g.pool if t.dt == F and t.exact and t is not a and t.shape == a.shape]
    b = g.ch(same) if same and g.r() < 0.5 else g.fconst(g.bshape(a.shape))
    op = g.ch(["Greater", "Less", "GreaterOrEqual", "LessOrEqual", "Equal"])
    if op in ("GreaterOrEqual", "LessOrEqual") and g.opset < 12:
        raise Skip()
    shape = _bcast(a.shape, b.shape)
    c = g.op(op, [a, b], shape, dt=B, exact=True)
    if g.r() < 0.4:
        c2 = g.op(g.ch(["Greater", "Less"]), [a, g.fconst((), 1.0)], a.shape, dt=B, exact=True)
        shape2 = _bcast(shape, a.shape)
        c = g.op(g.ch(["And", "Or", "Xor"]), [c, c2], shape2, dt=B, exact=True)
        shape = shape2
    if g.r() < 0.2:
        c = g.op("Not", [c], shape, dt=B, exact=True)
    if g.r() < 0.25:
        return g.op("Cast", [c], shape, exact=True, s=1.0, to=TP.FLOAT)
    x = g.pick(lambda t: _bcast(t.shape, shape) is not None)
    y = g.pick(lambda t: _bcast(_bcast(t.shape, shape) or (), x.shape) is not None)
    out = _bcast(_bcast(shape, x.shape), y.shape)
    if out is None or int(np.prod(out)) > MAX_ELEMS:
        raise Skip()
    return g.op("Where", [c, x, y], out, exact=x.exact and y.exact, s=max(x.s, y.s))


def t_int_island(g: G):
    """Exact float -> int32/int64 arithmetic and bitwise ops -> float."""
    x = g.pick(lambda t: t.exact)
    x = g.op("Mul", [x, g.const(np.array(4.0, dtype=np.float32))], x.shape, exact=True, s=x.s * 4)
    x = g.op("Floor", [x], x.shape, exact=True, s=x.s + 1)
    dt = g.ch([I32, I64])
    npdt = np.int32 if dt == I32 else np.int64
    i = g.op("Cast", [x], x.shape, dt=dt, exact=True, to=ELEM[dt])
    for _ in range(g.ri(1, 3)):
        op = g.ch(["Add", "Sub", "Mul", "Max", "Min", "Abs", "Neg", "BitwiseAnd", "BitwiseOr", "BitwiseXor", "Mod"])
        if op.startswith("Bitwise") and g.opset < 18:
            op = "Add"
        if op in ("Abs", "Neg") or (op == "BitwiseAnd" and g.r() < 0.3):
            op = "BitwiseNot" if op == "BitwiseAnd" else op
            i = g.op(op, [i], i.shape, dt=dt, exact=True)
        elif op == "Mod":
            i = g.op("Mod", [i, g.const(np.array(g.ch([3, 5, -4]), dtype=npdt))], i.shape, dt=dt, exact=True)
        else:
            c = g.const(g.rng.integers(-5, 6, size=g.bshape(i.shape)).astype(npdt))
            i = g.op(op, [i, c], i.shape, dt=dt, exact=True)
    return g.op("Cast", [i], i.shape, exact=True, s=x.s * 6 + 30, to=TP.FLOAT)


def t_clip(g: G):
    x = g.pick()
    lo, hi = sorted(g.rng.uniform(-2, 2, size=2).tolist())
    if g.opset >= 11 and g.r() < 0.8:
        ins = [x, g.const(np.array(lo, dtype=np.float32))]
        if g.r() < 0.7:
            ins.append(g.const(np.array(hi, dtype=np.float32)))
        return g.op("Clip", ins, x.shape, exact=x.exact, s=2.0)
    return g.op("Clip", [x], x.shape, exact=x.exact, s=x.s)


def t_chain(g: G):
    """A long elementwise chain (autofusion's target), sometimes with an intermediate read
    elsewhere (a near-miss: the chain must keep it)."""
    x = g.pick()
    n = g.ri(3, 10)
    mid = None
    for k in range(n):
        if not g.room(2):
            break
        if g.r() < 0.55:
            x = t_unary_on(g, x)
        else:
            c = g.fconst(g.bshape(x.shape), scale=0.5)
            op = g.ch(["Add", "Mul", "Sub", "Max"])
            s = x.s * c.s if op == "Mul" else x.s + c.s
            x = g.op(op, [x, c] if g.r() < 0.7 else [c, x], x.shape, s=s)
        if k == n // 2:
            mid = x
    if mid is not None and g.r() < 0.3 and g.room(1):
        g.op("Add", [mid, x], x.shape, s=mid.s + x.s)
    return x


def t_unary_on(g: G, x):
    op = g.ch(["Relu", "Sigmoid", "Tanh", "Abs", "Neg", "Exp", "Erf", "LeakyRelu", "HardSwish", "Softplus"])
    if op == "HardSwish" and g.opset < 14:
        op = "Relu"
    need, ex, fs = SAFE_UNARY[op]
    if need is not None:
        x = g.bounded(x, need)
    attrs = {"alpha": 0.1} if op == "LeakyRelu" else {}
    return g.op(op, [x], x.shape, exact=ex and x.exact, s=fs(x.s), **attrs)


# ---- CNN -------------------------------------------------------------------------------

def img(g):
    return g.pick(lambda t: t.rank == 4 and t.shape[2] >= 2 and t.shape[3] >= 2)


def conv_out(n, k, s, p0, p1, d):
    return (n + p0 + p1 - d * (k - 1) - 1) // s + 1


def t_conv(g: G, x=None):
    x = x or img(g)
    x = g.bounded(x, 8.0)
    n, c, hh, ww = x.shape
    groups = 1
    r = g.r()
    if r < 0.2 and c > 1:
        groups = c
    elif r < 0.3:
        ds = [d for d in range(2, c + 1) if c % d == 0]
        groups = g.ch(ds) if ds else 1
    co = groups * g.ri(1, max(1, 12 // groups)) if groups > 1 else g.ri(1, 16)
    k = g.ch([1, 3, 3, 5, 2])
    kh, kw = (k, k) if g.r() < 0.8 else (k, g.ch([1, 3]))
    st = g.ch([1, 1, 2])
    dil = 1 if g.r() < 0.85 else 2
    attrs = {"kernel_shape": [kh, kw]}
    if g.r() < 0.2:
        attrs["auto_pad"] = g.ch(["SAME_UPPER", "SAME_LOWER", "VALID"])
        ap = attrs["auto_pad"]
        if ap == "VALID":
            ph = pw = (0, 0)
        else:
            dil = 1
            ph = _same_pads(hh, kh, st, ap)
            pw = _same_pads(ww, kw, st, ap)
    else:
        ph = (g.ri(0, kh // 2 + (1 if g.r() < 0.2 else 0)), 0)
        ph = (ph[0], ph[0] if g.r() < 0.8 else g.ri(0, kh // 2))
        pw = (g.ri(0, kw // 2), 0)
        pw = (pw[0], pw[0] if g.r() < 0.8 else g.ri(0, kw // 2))
        attrs["pads"] = [ph[0], pw[0], ph[1], pw[1]]
    if dil > 1:
        attrs["dilations"] = [dil, dil]
    if st > 1:
        attrs["strides"] = [st, st]
    if groups > 1:
        attrs["group"] = groups
    ho, wo = conv_out(hh, kh, st, *ph, dil), conv_out(ww, kw, st, *pw, dil)
    if ho < 1 or wo < 1 or n * co * ho * wo > MAX_ELEMS:
        raise Skip()
    fan = (c // groups) * kh * kw
    w = g.fconst((co, c // groups, kh, kw), scale=1.0 / math.sqrt(fan))
    ins = [x, w]
    if g.r() < 0.6:
        ins.append(g.fconst((co,), 0.2))
    return g.op("Conv", ins, (n, co, ho, wo), s=x.s * 1.5 + 1, **attrs)


def _same_pads(n, k, s, mode):
    out = -(-n // s)
    total = max(0, (out - 1) * s + k - n)
    small, big = total // 2, total - total // 2
    return (small, big) if mode == "SAME_UPPER" else (big, small)


def bn(g: G, x):
    c = x.shape[1]
    return g.op(
        "BatchNormalization",
        [x, g.fconst((c,), 0.5).name, g.fconst((c,), 0.3).name,
         g.fconst((c,), 0.3).name, g.const(g.rng.uniform(0.5, 1.5, c).astype(np.float32))],
        x.shape, s=x.s * 2 + 1, epsilon=float(g.ch([1e-5, 1e-3])),
    )


def t_conv_bn_relu(g: G):
    """conv -> BN -> relu (BN folding + epilogue); near-miss: the BN (or conv) output also
    feeds another node, or the BN is on an input instead of a conv."""
    if not g.room(4):
        raise Skip()
    y = t_conv(g)
    if g.r() < 0.1:
        y = img(g)
        y = g.bounded(y, 8.0)
    b = bn(g, y)
    a = g.op(g.ch(["Relu", "Relu", "Sigmoid", "LeakyRelu", "Clip"]), [b], b.shape, s=b.s)
    if g.r() < 0.25 and g.room(1):
        other = g.ch([b, y])
        g.op("Mul", [other, g.fconst((1, other.shape[1], 1, 1), 0.5)], other.shape, s=other.s)
    return a


def t_bn(g: G):
    x = g.pick(lambda t: t.rank in (2, 3, 4) and t.shape[1] >= 1)
    return bn(g, x)


def t_pool(g: G):
    x = img(g)
    n, c, hh, ww = x.shape
    op = g.ch(["MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool", "LpPool"])
    if op.startswith("Global"):
        return g.op(op, [x], (n, c, 1, 1), exact=x.exact and op == "GlobalMaxPool", s=x.s)
    k = g.ch([2, 3])
    st = g.ch([1, 2, k])
    p = g.ri(0, k // 2) if g.r() < 0.4 else 0
    ceil = 1 if g.r() < 0.25 else 0
    attrs = {"kernel_shape": [k, k], "strides": [st, st]}
    if p:
        attrs["pads"] = [p, p, p, p]
    if op == "LpPool":
        attrs["p"] = 2
        ceil = 0
        if g.opset < 18:
            attrs.pop("strides")
            st = 1
    elif ceil:
        attrs["ceil_mode"] = 1
    if op == "AveragePool" and p and g.r() < 0.5:
        attrs["count_include_pad"] = 1

    def out(nn):
        v = (nn + 2 * p - k) / st + 1
        o = math.ceil((nn + 2 * p - k) / st) + 1 if ceil else (nn + 2 * p - k) // st + 1
        # ceil_mode where the last window would start in the right padding: onnx's shape
        # inference and PyTorch disagree there, so it is not generated.
        if ceil and (o - 1) * st >= nn + p:
            return 0
        return int(o) if v >= 1 else 0

    ho, wo = out(hh), out(ww)
    if ho < 1 or wo < 1 or k > hh + 2 * p or k > ww + 2 * p:
        raise Skip()
    return g.op(op, [x], (n, c, ho, wo), exact=x.exact and op == "MaxPool", s=x.s * (3 if op == "LpPool" else 1), **attrs)


def t_conv_transpose(g: G):
    x = g.bounded(img(g), 8.0)
    n, c, hh, ww = x.shape
    co = g.ri(1, 8)
    k = g.ch([2, 3])
    st = g.ch([1, 2])
    p = g.ri(0, k - 1) if g.r() < 0.4 else 0
    op_ = g.ri(0, st - 1) if st > 1 and g.r() < 0.3 else 0
    ho = (hh - 1) * st - 2 * p + k + op_
    wo = (ww - 1) * st - 2 * p + k + op_
    if ho < 1 or wo < 1 or n * co * ho * wo > MAX_ELEMS:
        raise Skip()
    attrs = {"kernel_shape": [k, k], "strides": [st, st], "pads": [p, p, p, p]}
    if op_:
        attrs["output_padding"] = [op_, op_]
    w = g.fconst((c, co, k, k), scale=1.0 / math.sqrt(c * k))
    ins = [x, w] + ([g.fconst((co,), 0.2)] if g.r() < 0.5 else [])
    return g.op("ConvTranspose", ins, (n, co, ho, wo), s=x.s * 2 + 1, **attrs)


def t_img_misc(g: G):
    x = img(g)
    n, c, hh, ww = x.shape
    op = g.ch(["DepthToSpace", "SpaceToDepth", "Resize", "InstanceNormalization", "LRN", "Pad",
               "GroupNormalization", "MeanVarianceNormalization", "LpNormalization"])
    if op == "DepthToSpace":
        b = 2
        if c % 4:
            raise Skip()
        mode = g.ch(["DCR", "CRD"])
        return g.op(op, [x], (n, c // 4, hh * 2, ww * 2), exact=x.exact, s=x.s, blocksize=b, mode=mode)
    if op == "SpaceToDepth":
        if hh % 2 or ww % 2:
            raise Skip()
        return g.op(op, [x], (n, c * 4, hh // 2, ww // 2), exact=x.exact, s=x.s, blocksize=2)
    if op == "Resize":
        if n * c * hh * ww * 4 > MAX_ELEMS:
            raise Skip()
        mode = g.ch(["nearest", "linear"])
        sc = np.array([1, 1, 2, 2], dtype=np.float32)
        attrs = {"mode": mode}
        if mode == "nearest":
            attrs["coordinate_transformation_mode"] = g.ch(["asymmetric", "half_pixel"])
            attrs["nearest_mode"] = g.ch(["floor", "round_prefer_floor"]) if attrs["coordinate_transformation_mode"] == "asymmetric" else "round_prefer_ceil"
        else:
            attrs["coordinate_transformation_mode"] = g.ch(["half_pixel", "align_corners", "asymmetric"])
        return g.op("Resize", [x, "", g.const(sc)], (n, c, hh * 2, ww * 2), exact=x.exact and mode == "nearest", s=x.s, **attrs)
    if op == "InstanceNormalization":
        return g.op(op, [x, g.fconst((c,), 0.5), g.fconst((c,), 0.3)], x.shape, s=5.0, epsilon=1e-5)
    if op == "GroupNormalization":
        if g.opset < 21:
            raise Skip()
        gs = [d for d in range(1, c + 1) if c % d == 0]
        ng = g.ch(gs)
        return g.op(op, [x, g.fconst((c,), 0.5), g.fconst((c,), 0.3)], x.shape, s=5.0, epsilon=1e-5, num_groups=ng)
    if op == "LRN":
        return g.op(op, [x], x.shape, s=x.s, size=g.ch([1, 3, 5]), alpha=1e-4, beta=0.75, bias=1.0)
    if op == "MeanVarianceNormalization":
        # Per-(n, c) spatial normalization; guard constant slices by requiring >= 4 values.
        if hh * ww < 4:
            raise Skip()
        return g.op(op, [x], x.shape, s=6.0, axes=[0, 2, 3])
    if op == "LpNormalization":
        return g.op(op, [g.positive(x, 0.5)], x.shape, s=1.0, axis=g.ch([1, -1]), p=g.ch([1, 2]))
    # Pad
    mode = g.ch(["constant", "reflect", "edge"])
    pads = [0, 0, g.ri(0, 2), g.ri(0, 2), 0, 0, g.ri(0, 2), g.ri(0, 2)]
    if mode == "reflect" and (max(pads[2], pads[6]) >= hh or max(pads[3], pads[7]) >= ww):
        raise Skip()
    out = (n, c, hh + pads[2] + pads[6], ww + pads[3] + pads[7])
    if int(np.prod(out)) > MAX_ELEMS:
        raise Skip()
    ins = [x, g.i64(pads)]
    if mode == "constant" and g.r() < 0.5:
        ins.append(g.const(np.array(g.ch([0.0, 1.5]), dtype=np.float32)))
    return g.op("Pad", ins, out, exact=x.exact, s=x.s + 1.5, mode=mode)


# ---- matmul / transformer ---------------------------------------------------------------

def t_matmul(g: G):
    a = g.bounded(g.pick(lambda t: t.rank >= 2 and t.shape[-1] <= 96), 8.0)
    k = a.shape[-1]
    nn = g.ri(1, 24)
    out = a.shape[:-1] + (nn,)
    if int(np.prod(out)) > MAX_ELEMS:
        raise Skip()
    r = g.r()
    if r < 0.6:
        w = g.fconst((k, nn), 1.0 / math.sqrt(k))
    elif r < 0.8:
        w = g.bounded(g.fconst(a.shape[:-2] + (k, nn), 1.0 / math.sqrt(k)), 8.0)
    else:  # another tensor of the graph shaped [.., K, N]
        c = [t for t in g.pool if t.dt == F and t.rank == 2 and t.shape[0] == k and t.shape[1] <= 24]
        if not c:
            raise Skip()
        w = g.ch(c)
        out = a.shape[:-1] + (w.shape[1],)
    m = g.op("MatMul", [a, w], out, s=a.s * (w.s if w.s > 1.5 else 1) * 2 + 1)
    if g.r() < 0.6 and g.room(2):
        # MatMul + Add (-> Gemm / epilogue); near-miss: a bias broadcasting along rows [M, 1].
        if g.r() < 0.8 or m.rank < 2:
            bias = g.fconst((out[-1],), 0.3)
        else:
            bias = g.fconst((out[-2], 1), 0.3)
        m = g.op("Add", [m, bias] if g.r() < 0.8 else [bias, m], out, s=m.s + 1)
        if g.r() < 0.4:
            m = t_unary_on(g, m)
    return m


def t_gemm(g: G):
    a = g.bounded(g.pick(lambda t: t.rank == 2), 8.0)
    m, k = a.shape
    ta = g.r() < 0.2
    if ta:
        a = g.op("Transpose", [a], (k, m), exact=a.exact, s=a.s, perm=[1, 0])
    nn = g.ri(1, 24)
    tb = g.r() < 0.5
    w = g.fconst((nn, k) if tb else (k, nn), 1.0 / math.sqrt(k))
    attrs = {}
    if ta:
        attrs["transA"] = 1
    if tb:
        attrs["transB"] = 1
    if g.r() < 0.3:
        attrs["alpha"] = float(g.ch([0.5, 2.0]))
    ins = [a, w]
    if g.r() < 0.8:
        ins.append(g.fconst(g.ch([(nn,), (1, nn), (m, nn), (m, 1), ()]), 0.3))
        if g.r() < 0.3:
            attrs["beta"] = float(g.ch([0.5, 2.0]))
    return g.op("Gemm", ins, (m, nn), s=a.s * 2 + 1, **attrs)


def t_einsum(g: G):
    a = g.bounded(g.pick(lambda t: t.rank in (2, 3)), 8.0)
    if a.rank == 2:
        m, k = a.shape
        nn = g.ri(1, 12)
        return g.op("Einsum", [a, g.fconst((k, nn), 1 / math.sqrt(k))], (m, nn), s=a.s * 2, equation="ij,jk->ik")
    b_, m, k = a.shape
    nn = g.ri(1, 12)
    if g.r() < 0.5:
        return g.op("Einsum", [a, g.fconst((b_, k, nn), 1 / math.sqrt(k))], (b_, m, nn), s=a.s * 2, equation="bij,bjk->bik")
    return g.op("Einsum", [a, g.fconst((nn, k), 1 / math.sqrt(k))], (b_, m, nn), s=a.s * 2, equation="bik,nk->bin")


def seq(g):
    return g.pick(lambda t: t.rank == 3 and t.shape[-1] >= 2)


def layernorm(g: G, x):
    """The decomposed LayerNorm exporters write (ReduceMean, Sub, Pow/Mul, ReduceMean, Add eps,
    Sqrt, Div, Mul gamma, Add beta), or native LayerNormalization (opset 17+)."""
    d = x.shape[-1]
    if g.opset >= 17 and g.r() < 0.3:
        return g.op("LayerNormalization", [x, g.fconst((d,), 0.5), g.fconst((d,), 0.3)], x.shape, s=6.0, axis=-1, epsilon=1e-5)
    if not g.room(9):
        raise Skip()
    red = x.shape[:-1] + (1,)
    mean = reduce_node(g, "ReduceMean", x, [-1], 1, red)
    xc = g.op("Sub", [x, mean], x.shape, s=x.s * 2)
    if g.r() < 0.5:
        sq = g.op("Pow", [xc, g.const(np.array(2.0, dtype=np.float32))], x.shape, s=xc.s ** 2)
    else:
        sq = g.op("Mul", [xc, xc], x.shape, s=xc.s ** 2)
    var = reduce_node(g, "ReduceMean", sq, [-1], 1, red)
    ve = g.op("Add", [var, g.const(np.array(1e-5, dtype=np.float32))], red, s=var.s)
    sd = g.op("Sqrt", [ve], red, s=x.s)
    y = g.op("Div", [xc, sd], x.shape, s=6.0)
    y = g.op("Mul", [y, g.fconst((d,), 0.5)], x.shape, s=6.0)
    return g.op("Add", [y, g.fconst((d,), 0.3)], x.shape, s=7.0)


def t_layernorm(g: G):
    x = g.pick(lambda t: t.rank >= 2 and t.shape[-1] >= 4)
    return layernorm(g, x)


def t_gelu(g: G):
    """GELU written out: erf form x*0.5*(1+erf(x/sqrt2)) or tanh form."""
    x = g.bounded(g.pick(), 8.0)
    if not g.room(8):
        raise Skip()
    c = lambda v: g.const(np.array(v, dtype=np.float32))  # noqa: E731
    if g.r() < 0.5:
        d = g.op("Div", [x, c(math.sqrt(2))], x.shape, s=x.s)
        e = g.op("Erf", [d], x.shape, s=1)
        a = g.op("Add", [e, c(1.0)], x.shape, s=2)
        m = g.op("Mul", [x, a], x.shape, s=x.s * 2)
        return g.op("Mul", [m, c(0.5)], x.shape, s=x.s)
    x3 = g.op("Pow", [x, c(3.0)], x.shape, s=x.s ** 3)
    t = g.op("Mul", [x3, c(0.044715)], x.shape, s=x.s ** 3 * 0.05)
    t = g.op("Add", [x, t], x.shape, s=x.s * 2)
    t = g.op("Mul", [t, c(math.sqrt(2 / math.pi))], x.shape, s=x.s * 2)
    t = g.op("Tanh", [t], x.shape, s=1)
    t = g.op("Add", [t, c(1.0)], x.shape, s=2)
    t = g.op("Mul", [x, t], x.shape, s=x.s * 2)
    return g.op("Mul", [t, c(0.5)], x.shape, s=x.s)


def t_attention(g: G):
    """Multi-head self-attention as exporters write it: Q/K/V MatMul+Add, Reshape to heads,
    Transpose, Q·Kᵀ, scale, optional causal mask, Softmax, ·V, Transpose back, Reshape, out
    projection; sometimes with a residual and a LayerNorm after it."""
    x = seq(g)
    b_, s_, d = x.shape
    heads = g.ch([h_ for h_ in (1, 2, 4) if d % h_ == 0])
    dh = d // heads
    if not g.room(22) or b_ * heads * s_ * s_ > MAX_ELEMS:
        raise Skip()
    x = g.bounded(x, 4.0)

    def proj(src):
        m = g.op("MatMul", [src, g.fconst((d, d), 1 / math.sqrt(d))], (b_, s_, d), s=4)
        return g.op("Add", [m, g.fconst((d,), 0.2)], (b_, s_, d), s=4)

    def heads_of(t, perm):
        r_ = g.op("Reshape", [t, g.i64([b_, s_, heads, dh] if g.r() < 0.6 else [0, 0, heads, -1])], (b_, s_, heads, dh), s=t.s)
        shp = tuple((b_, s_, heads, dh)[i] for i in perm)
        return g.op("Transpose", [r_], shp, s=t.s, perm=perm)

    q = heads_of(proj(x), [0, 2, 1, 3])
    k = heads_of(proj(x), [0, 2, 3, 1])
    v = heads_of(proj(x), [0, 2, 1, 3])
    sc = g.op("MatMul", [q, k], (b_, heads, s_, s_), s=16)
    div = g.r() < 0.5
    k_ = math.sqrt(dh) if div else 1 / math.sqrt(dh)
    sc = g.op("Div" if div else "Mul", [sc, g.const(np.array(k_, dtype=np.float32))], sc.shape, s=8)
    if g.r() < 0.4:
        mask = np.triu(np.full((s_, s_), -1e4, dtype=np.float32), 1).reshape(1, 1, s_, s_)
        sc = g.op("Add", [sc, g.const(mask)], sc.shape, s=8)
    p = g.op("Softmax", [sc], sc.shape, s=1, axis=-1)
    o = g.op("MatMul", [p, v], (b_, heads, s_, dh), s=4)
    o = g.op("Transpose", [o], (b_, s_, heads, dh), s=4, perm=[0, 2, 1, 3])
    o = g.op("Reshape", [o, g.i64([b_, s_, d])], (b_, s_, d), s=4)
    o = proj(o)
    if g.r() < 0.5 and g.room(10):
        o = g.op("Add", [o, x], o.shape, s=8)
        if g.r() < 0.6:
            o = layernorm(g, o)
    return o


def t_softmax(g: G):
    x = g.pick(lambda t: t.rank >= 1)
    op = g.ch(["Softmax", "LogSoftmax"])
    ax = g.ri(-x.rank, x.rank - 1)
    if g.opset < 13:
        ax = x.rank - 1
    return g.op(op, [g.bounded(x, 30.0)], x.shape, s=1.0 if op == "Softmax" else 40.0, axis=ax)


# ---- reductions --------------------------------------------------------------------------

def reduce_node(g: G, op, x, axes, keep, shape, s=None):
    attrs, ins = {}, [x]
    since = 13 if op == "ReduceSum" else 18
    if not keep:
        attrs["keepdims"] = 0
    g.axes_arg(axes, attrs, ins, since)
    return g.op(op, ins, shape, exact=x.exact and op in ("ReduceMax", "ReduceMin"), s=s if s is not None else x.s, **attrs)


def t_reduce(g: G):
    x = g.pick(lambda t: t.rank >= 1 and t.size > 1)
    op = g.ch(["ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceL1", "ReduceL2",
               "ReduceSumSquare", "ReduceLogSumExp", "ReduceLogSum", "ReduceProd"])
    nax = g.ri(1, min(2, x.rank))
    axes = sorted(g.rng.choice(x.rank, size=nax, replace=False).tolist())
    keep = 1 if g.r() < 0.6 else 0
    cnt = int(np.prod([x.shape[a] for a in axes]))
    if op == "ReduceProd":
        if cnt > 8:
            raise Skip()
        x = g.op("Add", [g.unit(x, 0.5), g.const(np.array(1.0, dtype=np.float32))], x.shape, s=1.5)
    if op == "ReduceLogSumExp":
        x = g.bounded(x, 10.0)
    if op == "ReduceLogSum":
        x = g.positive(x, 0.5)
    s = {"ReduceSum": x.s * cnt, "ReduceL1": x.s * cnt, "ReduceL2": x.s * math.sqrt(cnt),
         "ReduceSumSquare": x.s * x.s * cnt, "ReduceProd": 1.5 ** cnt,
         "ReduceLogSumExp": x.s + math.log(cnt) + 1, "ReduceLogSum": math.log(x.s * cnt) + 1}.get(op, x.s)
    shape = tuple((1 if keep else None) if i in axes else d for i, d in enumerate(x.shape))
    shape = tuple(d for d in shape if d is not None)
    neg = [a - x.rank if g.r() < 0.3 else a for a in axes]
    if op == "ReduceSum" or g.opset >= 18:
        return reduce_node(g, op, x, neg, keep, shape, s)
    attrs = {"axes": neg}
    if not keep:
        attrs["keepdims"] = 0
    return g.op(op, [x], shape, exact=x.exact and op in ("ReduceMax", "ReduceMin"), s=s, **attrs)


def t_argmax_topk(g: G):
    x = g.pick(lambda t: t.exact and t.rank >= 1 and t.size > 1)
    ax = g.ri(0, x.rank - 1)
    if g.r() < 0.5:
        op = g.ch(["ArgMax", "ArgMin"])
        keep = g.ch([0, 1])
        shape = tuple(1 if i == ax else d for i, d in enumerate(x.shape)) if keep else tuple(d for i, d in enumerate(x.shape) if i != ax)
        i = g.op(op, [x], shape, dt=I64, exact=True, axis=ax, keepdims=keep)
        if g.r() < 0.5:
            return g.op("Cast", [i], shape, exact=True, s=x.shape[ax], to=TP.FLOAT)
        return i
    kk = g.ri(1, x.shape[ax])
    shape = tuple(kk if i == ax else d for i, d in enumerate(x.shape))
    vals = T(g.fresh(), shape, F, exact=True, s=x.s)
    idx = T(g.fresh(), shape, I64, exact=True)
    attrs = {"axis": ax}
    if g.r() < 0.3:
        attrs["largest"] = 0
    g.node("TopK", [x, g.i64([kk])], [vals, idx], **attrs)
    return vals


def t_cumsum_trilu(g: G):
    x = g.pick(lambda t: t.rank >= 1)
    if g.r() < 0.5 and x.rank >= 2 and g.opset >= 14:
        ins = [x] + ([g.const(np.array(g.ri(-1, 1), dtype=np.int64))] if g.r() < 0.5 else [])
        return g.op("Trilu", ins, x.shape, exact=x.exact, s=x.s, upper=g.ch([0, 1]))
    ax = g.ri(0, x.rank - 1)
    return g.op("CumSum", [x, g.const(np.array(ax, dtype=np.int64))], x.shape, s=x.s * x.shape[ax],
                exclusive=g.ch([0, 1]), reverse=g.ch([0, 1]))


# ---- data movement -----------------------------------------------------------------------

def factor(g: G, n, rank):
    dims = [1] * rank
    primes = []
    m, p = n, 2
    while m > 1 and p * p <= m:
        while m % p == 0:
            primes.append(p)
            m //= p
        p += 1
    if m > 1:
        primes.append(m)
    for q in primes:
        dims[g.ri(0, rank - 1)] *= q
    return dims


def t_reshape(g: G):
    x = g.pick(lambda t: t.size >= 1)
    op = g.ch(["Reshape", "Reshape", "Flatten", "Transpose", "Transpose", "Squeeze", "Unsqueeze"])
    if op == "Reshape":
        rank = g.ri(1, 4)
        dims = factor(g, x.size, rank)
        spec = list(dims)
        if g.r() < 0.4:
            spec[g.ri(0, rank - 1)] = -1
        if g.r() < 0.2 and rank <= x.rank and spec[0] == x.shape[0]:
            spec[0] = 0
        return g.op("Reshape", [x, g.i64(spec)], tuple(dims), exact=x.exact, s=x.s)
    if op == "Flatten":
        ax = g.ri(0, x.rank)
        a = int(np.prod(x.shape[:ax])) if ax else 1
        return g.op("Flatten", [x], (a, x.size // a), exact=x.exact, s=x.s, axis=ax)
    if op == "Transpose":
        if x.rank < 2:
            raise Skip()
        perm = g.rng.permutation(x.rank).tolist()
        return g.op("Transpose", [x], tuple(x.shape[p] for p in perm), exact=x.exact, s=x.s, perm=perm)
    if op == "Squeeze":
        ones = [i for i, d in enumerate(x.shape) if d == 1]
        if not ones:
            raise Skip()
        axes = sorted(g.rng.choice(ones, size=g.ri(1, len(ones)), replace=False).tolist())
        attrs, ins = {}, [x]
        g.axes_arg(axes, attrs, ins, 13)
        return g.op("Squeeze", ins, tuple(d for i, d in enumerate(x.shape) if i not in axes), exact=x.exact, s=x.s, **attrs)
    if x.rank >= 4:
        raise Skip()
    ax = g.ri(0, x.rank)
    attrs, ins = {}, [x]
    g.axes_arg([ax], attrs, ins, 13)
    return g.op("Unsqueeze", ins, x.shape[:ax] + (1,) + x.shape[ax:], exact=x.exact, s=x.s, **attrs)


def t_concat(g: G):
    """Concat of branches (x with f(x), other pool tensors of matching dims, constants);
    sometimes a concat of concats (a tree the planner writes in place)."""
    x = g.pick(lambda t: t.rank >= 1)
    ax = g.ri(0, x.rank - 1)

    def match(t):
        return t.dt == F and t.rank == x.rank and all(a == b for i, (a, b) in enumerate(zip(t.shape, x.shape)) if i != ax)

    parts = [x]
    for _ in range(g.ri(1, 3)):
        c = [t for t in g.pool if match(t)]
        r = g.r()
        if r < 0.4 and c:
            parts.append(g.ch(c))
        elif r < 0.7 and g.room(3):
            parts.append(t_unary_on(g, g.ch(parts)))
        else:
            shp = list(x.shape)
            shp[ax] = g.ri(1, 4)
            parts.append(g.fconst(tuple(shp), 1.0))
    if g.r() < 0.3 and len(parts) >= 3 and g.room(3):
        inner = g.op("Concat", parts[:2], _cat_shape(parts[:2], ax), exact=all(p.exact for p in parts[:2]), s=max(p.s for p in parts[:2]), axis=ax)
        parts = [inner] + parts[2:]
    shape = _cat_shape(parts, ax)
    if int(np.prod(shape)) > MAX_ELEMS:
        raise Skip()
    neg = ax - x.rank if g.r() < 0.3 else ax
    return g.op("Concat", parts, shape, exact=all(p.exact for p in parts), s=max(p.s for p in parts), axis=neg)


def _cat_shape(parts, ax):
    s = list(parts[0].shape)
    s[ax] = sum(p.shape[ax] for p in parts)
    return tuple(s)


def t_split(g: G):
    x = g.pick(lambda t: t.rank >= 1 and max(t.shape) >= 2)
    ax = g.ch([i for i, d in enumerate(x.shape) if d >= 2])
    d = x.shape[ax]
    k = g.ri(2, min(3, d))
    cuts = sorted(g.rng.choice(np.arange(1, d), size=k - 1, replace=False).tolist())
    sizes = [b - a for a, b in zip([0] + cuts, cuts + [d])]
    attrs, ins = {"axis": ax}, [x]
    if g.opset >= 18 and g.r() < 0.4 and d % k == 0:
        sizes = [d // k] * k
        attrs["num_outputs"] = k
    elif g.opset >= 13:
        if g.r() < 0.8 or d % k or g.opset >= 18:
            ins.append(g.i64(sizes))
        else:
            sizes = [d // k] * k
    else:
        attrs["split"] = sizes
    outs = [T(g.fresh(), tuple(sz if i == ax else dd for i, dd in enumerate(x.shape)), F, x.exact, x.s) for sz in sizes]
    g.node("Split", ins, outs, **attrs)
    return outs[0]


def t_slice(g: G):
    x = g.pick(lambda t: t.rank >= 1 and max(t.shape) >= 2)
    nax = g.ri(1, min(2, x.rank))
    axes = sorted(g.rng.choice(x.rank, size=nax, replace=False).tolist())
    starts, ends, steps, shape = [], [], [], list(x.shape)
    for a in axes:
        d = x.shape[a]
        step = g.ch([1, 1, 1, 2, -1])
        if step > 0:
            s0 = g.ri(0, d - 1)
            e0 = g.ri(s0 + 1, d)
            n = len(range(s0, e0, step))
            if g.r() < 0.2:
                s0 -= d  # negative start
            if g.r() < 0.15 and e0 == d:
                e0 = 2**62  # "to the end"
        else:
            s0 = g.ri(0, d - 1)
            e0 = g.ri(-1, s0 - 1)
            n = len(range(s0, e0, step))
            if e0 == -1:
                e0 = -(2**62)
        starts.append(s0)
        ends.append(e0)
        steps.append(step)
        shape[a] = n
    ins = [x, g.i64(starts), g.i64(ends)]
    if g.r() < 0.8 or any(s != 1 for s in steps):
        ins.append(g.i64([a - x.rank if g.r() < 0.3 else a for a in axes]))
        if any(s != 1 for s in steps) or g.r() < 0.5:
            ins.append(g.i64(steps))
    elif any(a != i for i, a in enumerate(axes)):
        ins.append(g.i64(axes))
    return g.op("Slice", ins, tuple(shape), exact=x.exact, s=x.s)


def t_gather(g: G):
    x = g.pick(lambda t: t.rank >= 1)
    ax = g.ri(0, x.rank - 1)
    d = x.shape[ax]
    op = g.ch(["Gather", "Gather", "GatherElements", "Tile", "Expand", "Compress", "ScatterElements"])
    if op == "Gather":
        ishape = g.ch([(), (g.ri(1, 4),), (2, g.ri(1, 3))])
        idx = g.rng.integers(-d, d, size=ishape).astype(np.int64)
        shape = x.shape[:ax] + tuple(ishape) + x.shape[ax + 1:]
        if int(np.prod(shape)) > MAX_ELEMS:
            raise Skip()
        return g.op("Gather", [x, g.const(idx)], shape, exact=x.exact, s=x.s, axis=ax)
    if op == "GatherElements":
        shp = list(x.shape)
        shp[ax] = g.ri(1, d + 2)
        idx = g.rng.integers(-d, d, size=shp).astype(np.int64)
        return g.op(op, [x, g.const(idx)], tuple(shp), exact=x.exact, s=x.s, axis=ax)
    if op == "ScatterElements":
        # Unique indices along the axis so the result does not depend on write order.
        shp = list(x.shape)
        k = g.ri(1, d)
        shp[ax] = k
        idx = np.argsort(g.rng.random(tuple(x.shape)), axis=ax).take(np.arange(k), axis=ax).astype(np.int64)
        upd = g.fconst(tuple(shp), 1.0)
        return g.op(op, [x, g.const(idx), upd], x.shape, exact=x.exact, s=max(x.s, upd.s), axis=ax)
    if op == "Compress":
        cond = g.rng.random(d) < 0.6
        if not cond.any():
            cond[0] = True
        if g.r() < 0.3:
            cond = cond[: g.ri(1, d)]
        shape = tuple(int(cond.sum()) if i == ax else dd for i, dd in enumerate(x.shape))
        return g.op(op, [x, g.const(cond)], shape, exact=x.exact, s=x.s, axis=ax)
    if op == "Tile":
        reps = [g.ch([1, 1, 2, 3]) for _ in x.shape]
        shape = tuple(a * b for a, b in zip(x.shape, reps))
        if int(np.prod(shape)) > MAX_ELEMS:
            raise Skip()
        return g.op(op, [x, g.i64(reps)], shape, exact=x.exact, s=x.s)
    # Expand: size-1 dims grow, sometimes a new leading dim.
    shape = [g.ri(2, 4) if dd == 1 and g.r() < 0.6 else dd for dd in x.shape]
    spec = [1 if (dd == xd and dd != 1 and g.r() < 0.3) else dd for dd, xd in zip(shape, x.shape)]
    if g.r() < 0.3 and len(shape) < 4:
        shape = [2] + shape
        spec = [2] + spec
    if int(np.prod(shape)) > MAX_ELEMS:
        raise Skip()
    return g.op("Expand", [x, g.i64(spec)], tuple(shape), exact=x.exact, s=x.s)


def t_shape_subgraph(g: G):
    """Shape -> Gather -> Unsqueeze -> Concat -> Reshape (folded to a constant by import)."""
    x = g.pick(lambda t: t.rank >= 2)
    if not g.room(6):
        raise Skip()
    sh = g.op("Shape", [x], (x.rank,), dt=I64, exact=True)
    d0 = g.op("Gather", [sh, g.const(np.array(0, dtype=np.int64))], (), dt=I64, exact=True, axis=0)
    attrs, ins = {}, [d0]
    g.axes_arg([0], attrs, ins, 13)
    u = g.op("Unsqueeze", ins, (1,), dt=I64, exact=True, **attrs)
    cat = g.op("Concat", [u, g.i64([-1])], (2,), dt=I64, exact=True, axis=0)
    return g.op("Reshape", [x, cat], (x.shape[0], x.size // x.shape[0]), exact=x.exact, s=x.s)


def t_const_ops(g: G):
    """ConstantOfShape / Range / EyeLike feeding an Add (constant-folded or computed)."""
    x = g.pick(lambda t: t.rank >= 1)
    op = g.ch(["ConstantOfShape", "Range", "EyeLike", "Size"])
    if op == "ConstantOfShape":
        shape = g.bshape(x.shape)
        c = g.op(op, [g.i64(list(shape))], shape, exact=True, s=1.5, value=numpy_helper.from_array(np.array([1.5], dtype=np.float32)))
    elif op == "Range":
        n = x.shape[-1]
        c = g.op("Range", [g.const(np.array(-1.0, dtype=np.float32)), g.const(np.array(-1.0 + 0.25 * n, dtype=np.float32)),
                           g.const(np.array(0.25, dtype=np.float32))], (n,), exact=True, s=0.25 * n)
    elif op == "EyeLike":
        if x.rank != 2:
            raise Skip()
        c = g.op(op, [x], x.shape, exact=True, s=1.0, k=g.ri(-1, 1))
    else:
        sz = g.op("Size", [x], (), dt=I64, exact=True)
        c = g.op("Cast", [sz], (), exact=True, s=float(x.size), to=TP.FLOAT)
        c = g.op("Div", [c, g.const(np.array(float(x.size), dtype=np.float32))], (), exact=True, s=1.0)
    return g.op("Add", [x, c], _bcast(x.shape, c.shape), exact=x.exact and op != "Range", s=x.s + c.s)


def t_det(g: G):
    x = g.pick(lambda t: t.rank >= 2 and t.shape[-1] == t.shape[-2] and t.shape[-1] <= 4)
    return g.op("Det", [g.bounded(x, 2.0)], x.shape[:-2], s=30.0)


def t_residual(g: G):
    """x + f(x) with f a short chain, or x + y for any same-shaped earlier y (an in-place
    candidate only when x is not read again)."""
    x = g.pick()
    same = [t for t in g.pool if t.dt == F and t.shape == x.shape and t is not x]
    y = g.ch(same) if same and g.r() < 0.6 else t_unary_on(g, x)
    return g.op("Add", [x, y], x.shape, s=x.s + y.s)


# ---- more ops: recurrent, quantized, sequences, subgraphs, losses, sampling ---------------

def t_rnn(g: G):
    """RNN / GRU / LSTM over a [S, B, I] tensor (layout 0), forward, reverse or both ways."""
    x = g.bounded(g.pick(lambda t: t.rank == 3 and t.shape[2] <= 32), 4.0)
    sl, b_, i_ = x.shape
    op = g.ch(["RNN", "GRU", "LSTM"])
    hid = g.ri(2, 8)
    gates = {"RNN": 1, "GRU": 3, "LSTM": 4}[op]
    direction = g.ch(["forward", "reverse", "bidirectional"])
    nd = 2 if direction == "bidirectional" else 1
    sc = 0.6 / math.sqrt(hid + i_)
    ins = [x, g.fconst((nd, gates * hid, i_), sc), g.fconst((nd, gates * hid, hid), sc)]
    if g.r() < 0.7:
        ins.append(g.fconst((nd, 2 * gates * hid), 0.2))
    attrs = {"hidden_size": hid, "direction": direction}
    if op == "GRU" and g.r() < 0.5:
        attrs["linear_before_reset"] = 1
    y = T(g.fresh(), (sl, nd, b_, hid), F, False, 1.0)
    yh = T(g.fresh(), (nd, b_, hid), F, False, 1.0)
    g.node(op, ins, [y, yh], **attrs)
    return y


def t_quant(g: G):
    """QuantizeLinear -> DequantizeLinear (QDQ) of an exact tensor; DynamicQuantizeLinear;
    MatMulInteger of the quantized values (exact integer arithmetic)."""
    x = g.pick(lambda t: t.exact)
    k = g.r()
    if k < 0.4:
        u8 = g.r() < 0.5
        zp = np.array(128 if u8 else 0, dtype=np.uint8 if u8 else np.int8)
        scale = g.const(np.array(g.ch([0.05, 0.02, 0.125]), dtype=np.float32))
        zname = g.const(zp)
        q = g.op("QuantizeLinear", [x, scale, zname], x.shape, dt="q", exact=True)
        return g.op("DequantizeLinear", [q, scale, zname], x.shape, exact=True, s=x.s + 1)
    y, sc, zp = (T(g.fresh(), x.shape, "q", True), T(g.fresh(), (), F, True, 1.0), T(g.fresh(), (), "q", True))
    g.node("DynamicQuantizeLinear", [x], [y, sc, zp])
    if k < 0.7 or x.rank != 2 or x.shape[1] > 64:
        return g.op("DequantizeLinear", [y, sc, zp], x.shape, exact=True, s=x.s + 1)
    nn = g.ri(1, 8)
    w = g.const(g.rng.integers(-20, 21, size=(x.shape[1], nn)).astype(np.int8))
    mi = g.op("MatMulInteger", [y, w, zp], (x.shape[0], nn), dt=I32, exact=True)
    return g.op("Cast", [mi], mi.shape, exact=True, s=1e4, to=TP.FLOAT)


def t_index_ops(g: G):
    """OneHot, GatherND, ScatterND (unique indices), ReverseSequence, CastLike."""
    op = g.ch(["OneHot", "GatherND", "ScatterND", "ReverseSequence", "CastLike"])
    if op == "OneHot":
        depth = g.ri(2, 6)
        shp = g.ch([(3,), (2, 3), (g.ri(1, 5),)])
        idx = g.const(g.rng.integers(-depth, depth, size=shp).astype(np.int64))
        vals = g.const(np.array([g.ch([0.0, -1.0]), 2.0], dtype=np.float32))
        oh = g.op("OneHot", [idx, g.const(np.array(depth, dtype=np.int64)), vals], tuple(shp) + (depth,), exact=True, s=2.0, axis=-1)
        return oh
    x = g.pick(lambda t: t.rank >= 2)
    if op == "GatherND":
        m = g.ri(1, min(2, x.rank - 1))
        k = g.ri(1, 4)
        idx = np.stack([g.rng.integers(0, x.shape[a], size=k) for a in range(m)], axis=-1).astype(np.int64)
        return g.op("GatherND", [x, g.const(idx)], (k,) + x.shape[m:], exact=x.exact, s=x.s)
    if op == "ScatterND":
        d0 = x.shape[0]
        k = g.ri(1, d0)
        idx = g.rng.permutation(d0)[:k].reshape(k, 1).astype(np.int64)
        upd = g.fconst((k,) + x.shape[1:], 1.0)
        return g.op("ScatterND", [x, g.const(idx), upd], x.shape, exact=x.exact, s=max(x.s, upd.s))
    if op == "ReverseSequence":
        sl, b_ = x.shape[0], x.shape[1]
        lens = g.rng.integers(1, sl + 1, size=b_).astype(np.int64)
        return g.op(op, [x, g.const(lens)], x.shape, exact=x.exact, s=x.s, batch_axis=1, time_axis=0)
    c = g.op("Greater", [x, g.const(np.array(0.0, dtype=np.float32))], x.shape, dt=B, exact=True) if x.exact else None
    if c is None or g.opset < 15:
        raise Skip()
    return g.op("CastLike", [c, x], x.shape, exact=True, s=1.0)


def t_if(g: G):
    """If on a constant condition whose branches read outer-scope tensors."""
    x = g.pick()
    outn = g.fresh()
    then_y, else_y = g.fresh("th"), g.fresh("el")
    th = h.make_graph([h.make_node("Relu", [x.name], [then_y])], "then", [], [h.make_tensor_value_info(then_y, TP.FLOAT, list(x.shape))])
    el = h.make_graph([h.make_node("Neg", [x.name], [else_y])], "else", [], [h.make_tensor_value_info(else_y, TP.FLOAT, list(x.shape))])
    cond = g.const(np.array(g.r() < 0.5))
    return g.node("If", [cond], [T(outn, x.shape, F, x.exact, x.s)], then_branch=th, else_branch=el)


def t_sequence(g: G):
    """SequenceConstruct -> ConcatFromSequence / SequenceAt; SplitToSequence -> SequenceAt."""
    x = g.pick(lambda t: t.rank >= 1)
    if g.r() < 0.5:
        y = t_unary_on(g, x)
        sq = g.op("SequenceConstruct", [x, y], (), dt="seq")
        ax = g.ri(0, x.rank - 1)
        if g.r() < 0.5:
            shp = tuple(2 * d if i == ax else d for i, d in enumerate(x.shape))
            return g.op("ConcatFromSequence", [sq], shp, s=max(x.s, y.s), axis=ax)
        return g.op("SequenceAt", [sq, g.const(np.array(g.ch([0, 1, -1]), dtype=np.int64))], x.shape, s=max(x.s, y.s))
    ax = g.ch([i for i, d in enumerate(x.shape)])
    d = x.shape[ax]
    if d < 2:
        raise Skip()
    sq = g.op("SplitToSequence", [x, g.const(np.array(1, dtype=np.int64))], (), dt="seq", axis=ax, keepdims=1)
    shp = tuple(1 if i == ax else dd for i, dd in enumerate(x.shape))
    return g.op("SequenceAt", [sq, g.const(np.array(g.ri(-d, d - 1), dtype=np.int64))], shp, exact=x.exact, s=x.s)


def t_loss(g: G):
    """NegativeLogLikelihoodLoss / SoftmaxCrossEntropyLoss on [N, C] scores, constant targets."""
    x = g.bounded(g.pick(lambda t: t.rank == 2 and t.shape[1] >= 2), 8.0)
    n, c = x.shape
    tgt = g.const(g.rng.integers(0, c, size=(n,)).astype(np.int64))
    red = g.ch(["none", "mean", "sum"])
    shape = (n,) if red == "none" else ()
    op = g.ch(["NegativeLogLikelihoodLoss", "SoftmaxCrossEntropyLoss"])
    if op == "NegativeLogLikelihoodLoss":
        x = g.op("LogSoftmax", [x], x.shape, s=20.0, axis=1)
    return g.op(op, [x, tgt], shape, s=20.0 * n, reduction=red)


def t_window(g: G):
    """Hann/Hamming/Blackman windows (constant) added along the last axis."""
    if g.opset < 17:
        raise Skip()
    x = g.pick(lambda t: t.rank >= 1 and t.shape[-1] >= 2)
    op = g.ch(["HannWindow", "HammingWindow", "BlackmanWindow"])
    w = g.op(op, [g.const(np.array(x.shape[-1], dtype=np.int64))], (x.shape[-1],), s=1.0, periodic=g.ch([0, 1]))
    return g.op("Add", [x, w], x.shape, s=x.s + 1)


def t_sampling(g: G):
    """GridSample (grid from a constant or AffineGrid), CenterCropPad, Col2Im, MaxPool with
    indices -> MaxUnpool, GlobalLpPool."""
    x = img(g)
    n, c, hh, ww = x.shape
    op = g.ch(["GridSample", "AffineGrid", "CenterCropPad", "Col2Im", "MaxUnpool", "GlobalLpPool"])
    if op == "GlobalLpPool":
        if g.opset >= 22:  # onnxruntime has no GlobalLpPool-22 kernel
            raise Skip()
        return g.op(op, [x], (n, c, 1, 1), s=x.s * math.sqrt(hh * ww), p=2)
    if op in ("GridSample", "AffineGrid"):
        if g.opset < 16 or (g.opset < 20 and op == "AffineGrid"):
            raise Skip()
        ho, wo = g.ri(2, 8), g.ri(2, 8)
        ac = g.ch([0, 1])
        if op == "AffineGrid":
            theta = (np.array([[1, 0, 0], [0, 1, 0]], dtype=np.float32) + g.rng.normal(0, 0.2, (n, 2, 3))).astype(np.float32)
            grid = g.op("AffineGrid", [g.const(theta), g.i64([n, c, ho, wo])], (n, ho, wo, 2), s=2.0, align_corners=ac)
        else:
            grid = g.fconst((n, ho, wo, 2), 0.6)
        lin = "linear" if g.opset >= 20 else "bilinear"
        mode = g.ch([lin, lin, "nearest"]) if op == "GridSample" else lin
        return g.op("GridSample", [x, grid], (n, c, ho, wo), s=x.s * 2, mode=mode,
                    padding_mode=g.ch(["zeros", "border", "reflection"]), align_corners=ac)
    if op == "CenterCropPad":
        if g.opset < 18:
            raise Skip()
        th, tw = g.ri(1, hh + 3), g.ri(1, ww + 3)
        return g.op(op, [x, g.i64([th, tw])], (n, c, th, tw), exact=x.exact, s=x.s, axes=[2, 3])
    if op == "Col2Im":
        if g.opset < 18:
            raise Skip()
        k = 2
        L = (hh - k + 1) * (ww - k + 1)
        cols = g.fconst((n, c * k * k, L), 1.0)
        return g.op(op, [cols, g.i64([hh, ww]), g.i64([k, k])], (n, c, hh, ww), s=16.0)
    # MaxPool with indices -> MaxUnpool (non-overlapping 2x2 windows: no tied positions).
    if hh % 2 or ww % 2 or not x.exact:
        raise Skip()
    y = T(g.fresh(), (n, c, hh // 2, ww // 2), F, True, x.s)
    ind = T(g.fresh(), y.shape, I64, True)
    g.node("MaxPool", [x], [y, ind], kernel_shape=[2, 2], strides=[2, 2])
    return g.op("MaxUnpool", [y, ind], x.shape, exact=True, s=x.s, kernel_shape=[2, 2], strides=[2, 2])


def t_new_norms(g: G):
    """RMSNormalization (opset 23), Swish (24), RotaryEmbedding (23)."""
    x = g.pick(lambda t: t.rank >= 2 and t.shape[-1] >= 2)
    op = g.ch(["RMSNormalization", "Swish", "RotaryEmbedding"])
    if op == "Swish":
        if g.opset < 24:
            raise Skip()
        return g.op(op, [x], x.shape, s=x.s, alpha=float(g.ch([1.0, 1.5])))
    if g.opset < 23:
        raise Skip()
    if op == "RMSNormalization":
        ax = g.ch([-1, x.rank - 1] + ([-2] if x.rank >= 3 else []))
        nshape = x.shape[ax:] if ax >= 0 else x.shape[x.rank + ax:]
        return g.op(op, [x, g.fconst(nshape, 0.5)], x.shape, s=6.0, axis=ax, epsilon=1e-5)
    # RotaryEmbedding on [B, S, H*D] (3-D input with num_heads) or [B, H, S, D]
    if x.rank == 4:
        b_, hd, sl, d = x.shape
        heads = None
    elif x.rank == 3:
        b_, sl, hdim = x.shape
        heads = g.ch([h_ for h_ in (1, 2) if hdim % h_ == 0])
        d = hdim // heads
    else:
        raise Skip()
    if d % 2:
        raise Skip()
    rot = d
    maxpos = sl + 2
    ang = g.rng.uniform(0, 3, size=(maxpos, rot // 2)).astype(np.float32)
    cos, sin = g.const(np.cos(ang)), g.const(np.sin(ang))
    pos = g.const(np.tile(np.arange(sl, dtype=np.int64), (b_, 1)))
    attrs = {"interleaved": g.ch([0, 1])}
    if heads is not None:
        attrs["num_heads"] = heads
    return g.op(op, [x, cos, sin, pos], x.shape, s=x.s * 1.5, **attrs)


TEMPLATES = [
    (t_unary, 10, "any"), (t_guarded_unary, 4, "any"), (t_discont, 3, "any"),
    (t_binary, 12, "any"), (t_compare_where, 3, "any"), (t_int_island, 1.5, "any"), (t_clip, 2, "any"),
    (t_chain, 5, "any"), (t_residual, 4, "any"),
    (t_conv, 8, "cnn"), (t_conv_bn_relu, 6, "cnn"), (t_bn, 2, "any"), (t_pool, 5, "cnn"),
    (t_conv_transpose, 2, "cnn"), (t_img_misc, 5, "cnn"),
    (t_matmul, 8, "any"), (t_gemm, 4, "mlp"), (t_einsum, 2, "any"),
    (t_layernorm, 4, "seq"), (t_gelu, 3, "any"), (t_attention, 4, "seq"), (t_softmax, 4, "any"),
    (t_reduce, 6, "any"), (t_argmax_topk, 2, "any"), (t_cumsum_trilu, 2, "any"),
    (t_reshape, 8, "any"), (t_concat, 7, "any"), (t_split, 3, "any"), (t_slice, 4, "any"),
    (t_gather, 5, "any"), (t_shape_subgraph, 1.5, "any"), (t_const_ops, 1.5, "any"), (t_det, 0.5, "any"),
    (t_rnn, 1.5, "seq"), (t_quant, 1.5, "any"), (t_index_ops, 2, "any"), (t_if, 0.7, "any"),
    (t_sequence, 1, "any"), (t_loss, 0.7, "mlp"), (t_window, 0.5, "any"), (t_sampling, 2.5, "cnn"),
    (t_new_norms, 1.5, "any"),
]


def _inputs(g: G, theme: str):
    r = g.rng
    if theme == "cnn":
        shape = (g.ch([1, 1, 2]), g.ri(1, 8), g.ri(3, 14), g.ri(3, 14))
    elif theme == "seq":
        shape = (g.ch([1, 2]), g.ri(2, 8), g.ch([4, 8, 12, 16]))
    elif theme == "mlp":
        shape = (g.ri(1, 8), g.ri(2, 32))
    else:
        shape = tuple(int(r.integers(1, 7)) for _ in range(g.ri(1, 4)))
    main = g.add_input(shape)
    for _ in range(g.ri(0, 2)):
        # A second input: same shape (joins), a broadcastable one, or unrelated.
        k = g.r()
        s2 = shape if k < 0.5 else g.bshape(shape) if k < 0.8 else tuple(int(r.integers(1, 6)) for _ in range(g.ri(1, 3)))
        g.add_input(s2 or (1,))
    if g.r() < 0.3:
        g.fconst(shape, 1.0, pool=True)  # a constant operand in the pool
    return main


def build(seed: int, nodes: int | None = None):
    """A random valid graph for `seed` (and an optional node-count target). Returns
    (model, input values, ops used)."""
    rng = np.random.default_rng(seed)
    g = G(seed, rng)
    theme = g.ch(["cnn", "cnn", "seq", "seq", "mlp", "any", "any"])
    _inputs(g, theme)
    r = g.r()
    target = nodes or (g.ri(2, 12) if r < 0.45 else g.ri(12, 32) if r < 0.85 else g.ri(32, 60))
    temps = [(f, w * (2.0 if th == theme else 1.0 if th == "any" else 0.6)) for f, w, th in TEMPLATES]
    fs, ws = [t[0] for t in temps], np.array([t[1] for t in temps])
    ws = ws / ws.sum()
    tries = 0
    while len(g.nodes) < target and tries < 400:
        tries += 1
        f = fs[int(rng.choice(len(fs), p=ws))]
        mark = (len(g.nodes), len(g.inits), len(g.pool), set(g.used_ops), [t.uses for t in g.pool])
        try:
            f(g)
        except (Skip, IndexError, ValueError, ArithmeticError):
            # Undo a partly built template (also one that met a shape it does not handle,
            # e.g. a zero-sized dim).
            del g.nodes[mark[0]:]
            del g.inits[mark[1]:]
            del g.pool[mark[2]:]
            g.used_ops = mark[3]
            for t, u in zip(g.pool, mark[4]):
                t.uses = u
    # Outputs: every unread tensor, and sometimes one that is also read (a fused
    # intermediate must still be written).
    produced = {o for n in g.nodes for o in n.output}
    outs = [t for t in g.pool if t.uses == 0 and t.name in produced and t.dt in ELEM]
    extra = [t for t in g.pool if t.uses > 0 and t.name in produced and t not in outs and t.dt in ELEM]
    if extra and g.r() < 0.3:
        outs.append(g.ch(extra))
    if not outs:
        return None
    outs = outs[-6:]  # the rest stays as dead code for DCE
    graph = h.make_graph(
        g.nodes, f"difftest_{seed}", g.inputs,
        [h.make_tensor_value_info(t.name, ELEM[t.dt], list(t.shape)) for t in outs],
        initializer=g.inits,
    )
    m = h.make_model(graph, opset_imports=[h.make_opsetid("", g.opset)], producer_name="ge-difftest")
    m.ir_version = 8 if g.opset <= 18 else 10
    return m, g.vals, sorted(g.used_ops)


def onnx_check(m):
    onnx.checker.check_model(m, full_check=True)
