#!/usr/bin/env python3
"""Same-machine PyTorch peer of `deq train`, for benchmarks only.

It trains, with PyTorch on the CPU, the DEQ classifiers that `deq train`
trains -- the same architecture, initialisation scheme, forward and backward
solvers, tolerances, optimiser and schedule -- so that a benchmark can report
seconds per epoch and accuracy of both in one run on one machine. It is not
part of the library: nothing in the Go module imports or needs it, and the
benchmarks skip it with a note when Python or torch is missing (Debian's
python3-torch provides torch on these machines).

Models (--model):

  dense  e = relu(x We + be); z* = relu(z* W + e U + b) with the spectral norm
         of W projected onto gamma after every step; logits = z* Wr + br.
         Forward and backward: limited-memory Broyden on the whole batch as
         one vector (as the Go solver package does), forward tolerance on the
         largest per-example l2 residual, backward tolerance relative to the
         adjoint's first residual.
  conv   the TorchDEQ-style convolutional DEQ: a stride-2 3x3 conv encoder to
         C x 14 x 14 with GroupNorm, cell f(z) = GroupNorm(relu(W*z + u)) with
         weight normalisation on W, Anderson forward (relative tolerance) and
         Anderson implicit backward, 2x2 average pooling and a linear readout.
         --conv-style deq mirrors `deq train --cell conv` instead: encoder
         N(We*x + be) with GroupNorm N, relu(We*x + be) without, cell N(relu(W*z + u + b)) with the l2 operator
         norm of W's convolution projected onto gamma by power iteration after
         every step (no weight normalisation), N a GroupNorm only when
         --groups > 0, forward tolerance absolute on the largest per-example
         l2 residual, backward tolerance relative to the adjoint's first
         residual, evaluation at a tenth of the forward tolerance with twice
         its iterations.
         --encoder-layers N (both styles; default 1, while deq's default is 3:
         `deq bench` passes the number) deepens the encoder as
         `deq train --encoder-layers N` does: after the stride-2 conv, N - 1
         3x3 stride-1 C->C convs at 14 x 14; every block but the last is
         conv -> GroupNorm -> relu (conv -> relu without GroupNorm), the last
         is the one-block encoder's conv -> GroupNorm (deq style without
         GroupNorm: conv -> relu). deq style initialises the further convs'
         weights N(0, 2/(9C)) and their biases zero.

--backward jacobian-free (both models) replaces implicit differentiation by
the one-step Jacobian-free gradient, TorchDEQ's default (grad=1, tau=1):
the loss is backpropagated through one cell step at z*, no adjoint solve,
as `deq train --backward jacobian-free`.

Data (--data DIR) are the files a benchmark writes: train-x.f32 and
test-x.f32 (row-major float32 images, already standardised), train-y.u8 and
test-y.u8 (labels), and meta.json {"rows", "cols", "train", "test",
"classes"}. --idx DIR reads the four Fashion-MNIST/MNIST IDX files (gzip or
not) instead and standardises with the training set's mean and deviation.

Output: one JSON object per epoch on standard output, then a summary object
with "final": true. An epoch's "phases" are its seconds by phase, with the
names of deq's train.PhaseSeconds: "encode", "solve" (the forward solve under
no_grad), "readout" (readout and loss, without their gradients), "backward"
(the graph of the cell step at z* and loss.backward(), the adjoint solve and
every gradient included), "step" (clipping, Adam, schedule, projection) and
"eval" (the test-set evaluation, outside "train_seconds"); its "phase_cpu"
are the same phases' processor seconds (time.process_time, every thread of
the process), so that phase_cpu over phases is the cores a phase kept busy.
"""

import argparse
import gzip
import json
import math
import os
import struct
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


# ----------------------------------------------------------------- data

def read_idx(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        b = f.read()
    ndim = b[3]
    dims = struct.unpack(">" + "I" * ndim, b[4 : 4 + 4 * ndim])
    return np.frombuffer(b, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def find(dirname, stem):
    for name in (stem + ".gz", stem):
        p = os.path.join(dirname, name)
        if os.path.exists(p):
            return p
    raise FileNotFoundError(os.path.join(dirname, stem))


def load_idx(dirname):
    xtr = read_idx(find(dirname, "train-images-idx3-ubyte")).astype(np.float32) / 255
    ytr = read_idx(find(dirname, "train-labels-idx1-ubyte")).astype(np.int64)
    xte = read_idx(find(dirname, "t10k-images-idx3-ubyte")).astype(np.float32) / 255
    yte = read_idx(find(dirname, "t10k-labels-idx1-ubyte")).astype(np.int64)
    mean, std = xtr.mean(), xtr.std()
    xtr, xte = (xtr - mean) / std, (xte - mean) / std
    rows, cols = xtr.shape[1], xtr.shape[2]
    return xtr.reshape(len(xtr), -1), ytr, xte.reshape(len(xte), -1), yte, rows, cols, 10


def load_dir(dirname):
    with open(os.path.join(dirname, "meta.json")) as f:
        meta = json.load(f)
    n, m, d = meta["train"], meta["test"], meta["rows"] * meta["cols"]
    xtr = np.fromfile(os.path.join(dirname, "train-x.f32"), dtype="<f4").reshape(n, d)
    xte = np.fromfile(os.path.join(dirname, "test-x.f32"), dtype="<f4").reshape(m, d)
    ytr = np.fromfile(os.path.join(dirname, "train-y.u8"), dtype=np.uint8).astype(np.int64)
    yte = np.fromfile(os.path.join(dirname, "test-y.u8"), dtype=np.uint8).astype(np.int64)
    return xtr, ytr, xte, yte, meta["rows"], meta["cols"], meta.get("classes", 10)


# -------------------------------------------------------------- solvers

class SolveStats:
    def __init__(self):
        self.iters = 0
        self.met = True
        self.seconds = 0.0
        self.cpu_seconds = 0.0


def batch_residual(fz, z):
    """Largest per-example l2 norm of fz - z, and per-example norms."""
    r = (fz - z).flatten(1).norm(dim=1)
    return r.max().item(), r


def broyden(f, z0, tol, max_iter, memory=30, relative=False):
    """Limited-memory Broyden ("good" update of the inverse Jacobian of
    g(z) = f(z) - z, started at -I) on the whole batch as one vector. Stops
    when the largest per-example l2 residual is at most tol (times the first
    residual when relative). Returns the iterate of lowest residual."""
    shape = z0.shape
    z = z0.reshape(-1).clone()
    fz = f(z.view(shape)).reshape(-1)
    g = fz - z
    res0, _ = batch_residual(g.view(shape), torch.zeros_like(g).view(shape))
    target = tol * res0 if relative else tol
    best, best_res = z.clone(), res0
    us, vs = [], []
    st = SolveStats()
    res = res0
    while res > target and st.iters < max_iter:
        # dz = -H g with H = -I + sum u v^T
        dz = g.clone()
        for u, v in zip(us, vs):
            dz -= u * torch.dot(v, g)
        z_new = z + dz
        fz_new = f(z_new.view(shape)).reshape(-1)
        g_new = fz_new - z_new
        st.iters += 1
        y = g_new - g
        hy = -y
        for u, v in zip(us, vs):
            hy += u * torch.dot(v, y)
        hts = -dz
        for u, v in zip(us, vs):
            hts += v * torch.dot(u, dz)
        den = torch.dot(dz, hy)
        if den.abs() > 1e-30:
            if len(us) == memory:
                us.pop(0)
                vs.pop(0)
            us.append((dz - hy) / den)
            vs.append(hts)
        z, g = z_new, g_new
        res, _ = batch_residual(g.view(shape), torch.zeros_like(g).view(shape))
        if res < best_res:
            best, best_res = z.clone(), res
    st.met = best_res <= target
    return best.view(shape), st


def anderson(f, z0, tol, max_iter, memory=5, ridge=1e-4, beta=1.0, mode="rel"):
    """Anderson acceleration (type II) per example, as in TorchDEQ-style
    code: stops when every example's residual is at most tol, the residual
    being ||f(z) - z|| / (||f(z)|| + 1e-5) (mode "rel"), ||f(z) - z||
    ("abs"), or ||f(z) - z|| over the largest first residual ("first")."""
    bsz = z0.shape[0]
    shape = z0.shape
    d = z0[0].numel()
    X = torch.zeros(bsz, memory, d, dtype=z0.dtype)
    Fv = torch.zeros(bsz, memory, d, dtype=z0.dtype)
    X[:, 0] = z0.reshape(bsz, -1)
    Fv[:, 0] = f(z0).reshape(bsz, -1)
    X[:, 1] = Fv[:, 0]
    Fv[:, 1] = f(Fv[:, 0].view(shape)).reshape(bsz, -1)
    H = torch.zeros(bsz, memory + 1, memory + 1, dtype=z0.dtype)
    H[:, 0, 1:] = H[:, 1:, 0] = 1
    y = torch.zeros(bsz, memory + 1, 1, dtype=z0.dtype)
    y[:, 0] = 1
    st = SolveStats()
    st.iters = 2
    best, best_res = Fv[:, 1].clone(), float("inf")
    scale = 1.0
    if mode == "first":
        scale = max((Fv[:, 0] - X[:, 0]).norm(dim=1).max().item(), 1e-30)
    k = 2
    while True:
        n = min(k, memory)
        G = Fv[:, :n] - X[:, :n]
        rel = (G.norm(dim=2) / (Fv[:, :n].norm(dim=2) + 1e-5))
        last = (k - 1) % memory
        r = (Fv[:, last] - X[:, last]).norm(dim=1)
        if mode == "rel":
            r = r / (Fv[:, last].norm(dim=1) + 1e-5)
        r_last = r.max().item() / scale
        if r_last < best_res:
            best, best_res = Fv[:, last].clone(), r_last
        if r_last <= tol or st.iters >= max_iter:
            break
        H[:, 1 : n + 1, 1 : n + 1] = torch.bmm(G, G.transpose(1, 2)) + ridge * torch.eye(n, dtype=z0.dtype)[None]
        alpha = torch.linalg.solve(H[:, : n + 1, : n + 1], y[:, : n + 1])[:, 1 : n + 1, 0]
        i = k % memory
        X[:, i] = beta * (alpha[:, None] @ Fv[:, :n])[:, 0] + (1 - beta) * (alpha[:, None] @ X[:, :n])[:, 0]
        Fv[:, i] = f(X[:, i].view(shape)).reshape(bsz, -1)
        st.iters += 1
        k += 1
        del rel
    st.met = best_res <= tol
    return best.view(shape), st


def anderson_adjoint(f, z0, tol, max_iter):
    return anderson(f, z0, tol, max_iter)


# --------------------------------------------------------------- models

class DenseDEQ(nn.Module):
    def __init__(self, inputs, hidden, encoder, classes, gamma):
        super().__init__()
        self.enc = nn.Linear(inputs, encoder)
        self.W = nn.Parameter(torch.empty(hidden, hidden))
        self.U = nn.Parameter(torch.empty(encoder, hidden))
        self.b = nn.Parameter(torch.zeros(hidden))
        self.out = nn.Linear(hidden, classes)
        self.gamma = gamma
        with torch.no_grad():
            nn.init.normal_(self.enc.weight, std=math.sqrt(2 / inputs))
            nn.init.zeros_(self.enc.bias)
            nn.init.normal_(self.W, std=math.sqrt(1 / hidden))
            nn.init.normal_(self.U, std=math.sqrt(1 / encoder))
            nn.init.normal_(self.out.weight, std=math.sqrt(1 / hidden))
            nn.init.zeros_(self.out.bias)
        self.project()

    def project(self):
        with torch.no_grad():
            s = torch.linalg.matrix_norm(self.W, ord=2)
            if s > self.gamma:
                self.W.mul_(self.gamma / s)

    def cell(self, z, inj):
        return F.relu(z @ self.W + inj)

    def injection(self, x):
        e = F.relu(self.enc(x))
        return e @ self.U + self.b


class ConvDEQ(nn.Module):
    def __init__(self, side, channels, classes, groups, style="torchdeq", gamma=0.9, power_iters=4, encoder_layers=1):
        super().__init__()
        c = channels
        norm = lambda: nn.GroupNorm(groups, c) if groups > 0 else nn.Identity()
        self.style, self.gamma, self.power_iters = style, gamma, power_iters
        self.enc = nn.Conv2d(1, c, 3, stride=2, padding=1)
        self.enc_norm = norm()
        conv = nn.Conv2d(c, c, 3, padding=1, bias=style == "deq")
        self.conv = conv if style == "deq" else nn.utils.weight_norm(conv)
        self.norm = norm()
        self.side = side
        self.out = nn.Linear(c * (side // 4) * (side // 4), classes)
        if style == "deq":
            # deq's initialisation: W ~ N(0, 1/(9C)), encoder N(0, 2/9),
            # biases zero; then 60 warm power-iteration steps and a
            # projection, as layers.NewConv does.
            with torch.no_grad():
                nn.init.normal_(self.conv.weight, std=math.sqrt(1 / (9 * c)))
                nn.init.zeros_(self.conv.bias)
                nn.init.normal_(self.enc.weight, std=math.sqrt(2 / 9))
                nn.init.zeros_(self.enc.bias)
            half = (side + 1) // 2
            self.register_buffer("v", torch.randn(1, c, half, half))
            self.project(iters=60)
        # The encoder's further stride-1 blocks, made last so that a
        # one-block encoder draws what it always has.
        self.stem = nn.ModuleList(nn.Conv2d(c, c, 3, padding=1) for _ in range(encoder_layers - 1))
        self.stem_norms = nn.ModuleList(norm() for _ in range(encoder_layers - 1))
        if style == "deq":
            with torch.no_grad():
                for conv in self.stem:
                    nn.init.normal_(conv.weight, std=math.sqrt(2 / (9 * c)))
                    nn.init.zeros_(conv.bias)

    def cell(self, z, inj):
        return self.norm(F.relu(self.conv(z) + inj))

    def injection(self, x):
        h = x.view(-1, 1, self.side, self.side)
        blocks = [(self.enc, self.enc_norm)] + list(zip(self.stem, self.stem_norms))
        for i, (conv, norm) in enumerate(blocks):
            h = conv(h)
            if i < len(blocks) - 1:
                # Every block but the last: GroupNorm then relu (relu
                # alone without GroupNorm).
                h = F.relu(norm(h))
                continue
            if self.style == "deq" and isinstance(norm, nn.Identity):
                # deq's encoder: relu(We*x + be) without GroupNorm, and
                # GroupNorm in place of the activation with it.
                h = F.relu(h)
            h = norm(h)
        return h

    def project(self, iters=0):
        """deq style: power iteration on the convolution operator (its
        adjoint is the transposed convolution), then W scaled so that the
        estimated l2 operator norm is at most gamma."""
        if self.style != "deq":
            return
        with torch.no_grad():
            w, v = self.conv.weight, self.v
            for _ in range(iters or self.power_iters):
                v = F.conv_transpose2d(F.conv2d(v, w, padding=1), w, padding=1)
                v = v / v.norm()
            self.v.copy_(v)
            s = F.conv2d(v, w, padding=1).norm().item()
            if s > self.gamma:
                w.mul_(self.gamma / s)


# -------------------------------------------------------------- training

def deq_forward(model, inj, fwd, bwd, training):
    """Solve z* = cell(z*, inj) without a graph, then attach one cell step
    whose backward hook solves the adjoint fixed point (implicit
    differentiation; bwd None: the one-step Jacobian-free gradient, the
    step alone, TorchDEQ's default grad=1, tau=1)."""
    f = lambda z: model.cell(z, inj)
    t0, c0 = time.perf_counter(), time.process_time()
    with torch.no_grad():
        z_star, fst = fwd(f, torch.zeros_like(inj))
    fst.seconds = time.perf_counter() - t0
    fst.cpu_seconds = time.process_time() - c0
    bst = SolveStats()
    if not training:
        return z_star, fst, bst
    if bwd is None:
        return f(z_star), fst, bst
    z = f(z_star.requires_grad_())
    z0 = z.detach().requires_grad_()
    f0 = model.cell(z0, inj)

    def hook(grad):
        if hook.done:
            return grad
        hook.done = True
        vjp = lambda y: torch.autograd.grad(f0, z0, y, retain_graph=True)[0] + grad
        g, s = bwd(vjp, grad.clone())
        bst.iters, bst.met = s.iters, s.met
        return g

    hook.done = False
    z.register_hook(hook)
    return z, fst, bst


def run(args):
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    np.random.seed(args.seed)
    if args.idx:
        xtr, ytr, xte, yte, rows, cols, classes = load_idx(args.idx)
    else:
        xtr, ytr, xte, yte, rows, cols, classes = load_dir(args.data)
    if args.train_limit:
        xtr, ytr = xtr[: args.train_limit], ytr[: args.train_limit]
    if args.test_limit:
        xte, yte = xte[: args.test_limit], yte[: args.test_limit]
    dtype = torch.float64 if args.float64 else torch.float32
    xtr, xte = torch.tensor(xtr, dtype=dtype), torch.tensor(xte, dtype=dtype)
    ytr, yte = torch.tensor(ytr), torch.tensor(yte)

    if args.model == "dense":
        model = DenseDEQ(rows * cols, args.hidden, args.encoder or args.hidden, classes, args.gamma)
        fwd = lambda f, z0: broyden(f, z0, args.tol, args.max_iter)
        bwd = lambda f, g0: broyden(f, g0, args.backward_tol, args.backward_iter, relative=True)
        efwd = lambda f, z0: broyden(f, z0, args.tol / 10, 2 * args.max_iter)
    elif args.conv_style == "deq":
        model = ConvDEQ(rows, args.channels, classes, args.groups, "deq", args.gamma, encoder_layers=args.encoder_layers)
        fwd = lambda f, z0: anderson(f, z0, args.tol, args.max_iter, mode="abs")
        bwd = lambda f, g0: anderson(f, g0, args.backward_tol, args.backward_iter, mode="first")
        efwd = lambda f, z0: anderson(f, z0, args.tol / 10, 2 * args.max_iter, mode="abs")
    else:
        model = ConvDEQ(rows, args.channels, classes, args.groups, encoder_layers=args.encoder_layers)
        fwd = lambda f, z0: anderson(f, z0, args.tol, args.max_iter)
        bwd = lambda f, g0: anderson(f, g0, args.backward_tol, args.backward_iter)
        efwd = fwd
    if args.backward == "jacobian-free":
        bwd = None
    model = model.to(dtype)
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)
    nb = len(xtr) // args.batch
    total = args.epochs * nb
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda t: 0.5 * (1 + math.cos(math.pi * t / total)))
    g = torch.Generator().manual_seed(args.seed)
    history = []
    for epoch in range(args.epochs):
        model.train()
        perm = torch.randperm(len(xtr), generator=g)
        t0 = time.perf_counter()
        loss_sum, correct, fwd_iters, bwd_iters, fwd_met = 0.0, 0, 0, 0, 0
        # Seconds per phase, as deq's train.PhaseSeconds: the encoder; the
        # forward solve (under no_grad); the readout and loss (their
        # gradients fall in backward: autograd runs them in loss.backward());
        # backward: the graph of the cell step at z*, then loss.backward()
        # with the adjoint solve in its hook; the optimiser step.
        ph = {"encode": 0.0, "solve": 0.0, "readout": 0.0, "backward": 0.0, "step": 0.0}
        # The same phases' processor seconds (time.process_time: every
        # thread of the process, torch's intra-op pool included).
        cpu = {"encode": 0.0, "solve": 0.0, "readout": 0.0, "backward": 0.0, "step": 0.0}
        for i in range(nb):
            idx = perm[i * args.batch : (i + 1) * args.batch]
            x, y = xtr[idx], ytr[idx]
            t1, c1 = time.perf_counter(), time.process_time()
            inj = model.injection(x)
            t2, c2 = time.perf_counter(), time.process_time()
            z, fst, bst = deq_forward(model, inj, fwd, bwd, True)
            t3, c3 = time.perf_counter(), time.process_time()
            h = F.avg_pool2d(z, 2).flatten(1) if args.model == "conv" else z
            logits = model.out(h)
            loss = F.cross_entropy(logits, y)
            t4, c4 = time.perf_counter(), time.process_time()
            opt.zero_grad(set_to_none=True)
            loss.backward()
            t5, c5 = time.perf_counter(), time.process_time()
            torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip)
            opt.step()
            sched.step()
            model.project()
            t6, c6 = time.perf_counter(), time.process_time()
            cpu["encode"] += c2 - c1
            cpu["solve"] += fst.cpu_seconds
            cpu["backward"] += (c3 - c2 - fst.cpu_seconds) + (c5 - c4)
            cpu["readout"] += c4 - c3
            cpu["step"] += c6 - c5
            ph["encode"] += t2 - t1
            ph["solve"] += fst.seconds
            ph["backward"] += (t3 - t2 - fst.seconds) + (t5 - t4)
            ph["readout"] += t4 - t3
            ph["step"] += t6 - t5
            loss_sum += loss.item()
            correct += (logits.argmax(1) == y).sum().item()
            fwd_iters += fst.iters
            bwd_iters += bst.iters
            fwd_met += int(fst.met)
        train_seconds = time.perf_counter() - t0
        model.eval()
        t_eval, c_eval = time.perf_counter(), time.process_time()
        test_correct = 0
        with torch.no_grad():
            for i in range(0, len(xte), args.eval_batch):
                x = xte[i : i + args.eval_batch]
                inj = model.injection(x)
                z, _, _ = deq_forward(model, inj, efwd, None, False)
                h = F.avg_pool2d(z, 2).flatten(1) if args.model == "conv" else z
                test_correct += (model.out(h).argmax(1) == yte[i : i + args.eval_batch]).sum().item()
        ph["eval"] = time.perf_counter() - t_eval
        cpu["eval"] = time.process_time() - c_eval
        rec = {
            "epoch": epoch + 1,
            "train_seconds": train_seconds,
            "train_loss": loss_sum / nb,
            "train_acc": correct / (nb * args.batch),
            "test_acc": test_correct / len(xte),
            "fwd_iters_mean": fwd_iters / nb,
            "bwd_iters_mean": bwd_iters / nb,
            "fwd_met_frac": fwd_met / nb,
            "phases": ph,
            "phase_cpu": cpu,
        }
        history.append(rec)
        print(json.dumps(rec), flush=True)
    summary = {
        "final": True,
        "model": args.model,
        "conv_style": args.conv_style if args.model == "conv" else "",
        "encoder_layers": args.encoder_layers if args.model == "conv" else 0,
        "backward": args.backward,
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "blas": blas_name(),
        "dtype": str(dtype).replace("torch.", ""),
        "train": len(xtr),
        "test": len(xte),
        "epochs": args.epochs,
        "seconds_per_epoch": sum(h["train_seconds"] for h in history) / len(history),
        "test_acc": history[-1]["test_acc"],
    }
    print(json.dumps(summary), flush=True)


def blas_name():
    """The BLAS torch links: from its build settings, or for Debian's generic
    build the library behind the libblas.so.3 alternative."""
    cfg = torch.__config__.show()
    info = cfg.split("BLAS_INFO=", 1)[1].split(",", 1)[0] if "BLAS_INFO=" in cfg else "unknown"
    if info != "generic":
        return info
    for path in ("/etc/alternatives/libblas.so.3-x86_64-linux-gnu", "/etc/alternatives/libblas.so.3"):
        if os.path.exists(path):
            target = os.path.realpath(path)
            for name in ("openblas", "blis", "atlas", "mkl"):
                if name in target:
                    return name
            return "reference (" + target + ")"
    return "generic"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--data", help="directory written by the benchmark (meta.json, *.f32, *.u8)")
    src.add_argument("--idx", help="directory of the four IDX files")
    p.add_argument("--model", choices=["dense", "conv"], default="dense")
    p.add_argument("--hidden", type=int, default=128)
    p.add_argument("--encoder", type=int, default=0)
    p.add_argument("--channels", type=int, default=48)
    p.add_argument("--groups", type=int, default=8, help="conv: GroupNorm groups (0: no GroupNorm)")
    p.add_argument("--conv-style", choices=["torchdeq", "deq"], default="torchdeq",
                   help="conv: the TorchDEQ-style model or a mirror of deq's (see the module documentation)")
    p.add_argument("--encoder-layers", type=int, default=1,
                   help="conv: convolution blocks of the encoder, the stride-2 one then 3x3 stride-1 ones (0 or 1: one)")
    p.add_argument("--gamma", type=float, default=0.9)
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--eval-batch", type=int, default=500)
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--clip", type=float, default=5.0)
    p.add_argument("--tol", type=float, default=1e-3)
    p.add_argument("--max-iter", type=int, default=40)
    p.add_argument("--backward", choices=["implicit", "jacobian-free"], default="implicit",
                   help="implicit differentiation (the adjoint solve), or the one-step Jacobian-free gradient (TorchDEQ's default)")
    p.add_argument("--backward-tol", type=float, default=1e-3)
    p.add_argument("--backward-iter", type=int, default=40)
    p.add_argument("--train-limit", type=int, default=0)
    p.add_argument("--test-limit", type=int, default=0)
    p.add_argument("--threads", type=int, default=1, help="torch threads (default 1, as deq bench's peer section)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--float64", action="store_true", help="compute in float64, as deq does (default float32)")
    args = p.parse_args(argv)
    if args.encoder_layers < 0:
        p.error("--encoder-layers must not be negative")
    args.encoder_layers = max(args.encoder_layers, 1)
    run(args)


if __name__ == "__main__":
    main()
