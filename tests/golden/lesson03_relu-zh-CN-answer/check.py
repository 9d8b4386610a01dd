#!/usr/bin/env python3
"""Self-check for one coursepack lesson. Needs only Python, torch and triton.

    python check.py                 check the kernel file beside this script
    python check.py PATH            check another .py file, or the exercise cell of an .ipynb
    python check.py --json          per-case results as JSON
    python check.py --hint N        hint level N
    python check.py --report F.md   write a submission report
    python check.py --bench         bandwidth on this GPU (needs a CUDA GPU)

Each run of the student's code happens in a child process, so a kernel that hangs or crashes
fails its case with a reason and this script always ends.
"""
import argparse
import difflib
import io
import json
import os
import queue
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import tokenize
import zlib
from pathlib import Path

# The data block below is written by coursepack when it builds the pack.
LESSON = json.loads(r"""{
 "blank_line": 16,
 "case_names": {
  "block_1": "长度 256（正好一个块）",
  "block_4": "长度 1024（四个整块）",
  "empty": "空输入（长度 0）",
  "large": "长度 16,777,259（大输入，仅 GPU）",
  "random_bf16": "bfloat16，长度 4096",
  "random_f16": "float16，长度 4096",
  "seed": "种子示例 [-2, 0, 3, -4, 5]",
  "special_bf16": "特殊值 NaN、±inf、±0（bfloat16）",
  "special_f16": "特殊值 NaN、±inf、±0（float16）",
  "special_f32": "特殊值 NaN、±inf、±0（float32）",
  "tail_1": "长度 1（尾块只有 1 个元素）",
  "tail_100003": "长度 100,003（多个块加尾块）",
  "tail_255": "长度 255（比一个块少 1）",
  "tail_257": "长度 257（尾块 1 个元素）",
  "tail_5": "长度 5"
 },
 "cases": [
  {
   "dtype": "float32",
   "gpu_only": false,
   "group": "normal",
   "id": "seed",
   "values": [
    "-2.0",
    "0.0",
    "3.0",
    "-4.0",
    "5.0"
   ]
  },
  {
   "dtype": "float32",
   "gpu_only": false,
   "group": "normal",
   "id": "block_1",
   "size": 256
  },
  {
   "dtype": "float32",
   "gpu_only": false,
   "group": "normal",
   "id": "block_4",
   "size": 1024
  },
  {
   "dtype": "float16",
   "gpu_only": false,
   "group": "normal",
   "id": "random_f16",
   "size": 4096
  },
  {
   "dtype": "bfloat16",
   "gpu_only": false,
   "group": "normal",
   "id": "random_bf16",
   "size": 4096
  },
  {
   "dtype": "float32",
   "gpu_only": true,
   "group": "normal",
   "id": "large",
   "size": 16777259
  },
  {
   "dtype": "float32",
   "gpu_only": false,
   "group": "boundary",
   "id": "tail_1",
   "size": 1
  },
  {
   "dtype": "float32",
   "gpu_only": false,
   "group": "boundary",
   "id": "tail_5",
   "size": 5
  },
  {
   "dtype": "float32",
   "gpu_only": false,
   "group": "boundary",
   "id": "tail_255",
   "size": 255
  },
  {
   "dtype": "float32",
   "gpu_only": false,
   "group": "boundary",
   "id": "tail_257",
   "size": 257
  },
  {
   "dtype": "float32",
   "gpu_only": false,
   "group": "boundary",
   "id": "tail_100003",
   "size": 100003
  },
  {
   "dtype": "float32",
   "gpu_only": false,
   "group": "boundary",
   "id": "empty",
   "size": 0
  },
  {
   "dtype": "float32",
   "gpu_only": false,
   "group": "boundary",
   "id": "special_f32",
   "size": 300,
   "values": [
    "nan",
    "inf",
    "-inf",
    "0.0",
    "-0.0",
    "-1.5",
    "2.5",
    "nan"
   ]
  },
  {
   "dtype": "float16",
   "gpu_only": false,
   "group": "boundary",
   "id": "special_f16",
   "size": 300,
   "values": [
    "nan",
    "inf",
    "-inf",
    "0.0",
    "-0.0",
    "-1.5",
    "2.5",
    "nan"
   ]
  },
  {
   "dtype": "bfloat16",
   "gpu_only": false,
   "group": "boundary",
   "id": "special_bf16",
   "size": 300,
   "values": [
    "nan",
    "inf",
    "-inf",
    "0.0",
    "-0.0",
    "-1.5",
    "2.5",
    "nan"
   ]
  }
 ],
 "edition": "answer",
 "edition_name": "参考答案版",
 "entry": "relu",
 "hint_names": [
  "概念区域",
  "具体方向",
  "关键局部",
  "完整答案"
 ],
 "hints": [
  "ReLU 是逐元素的 $\\max(x, 0)$；在内核里 `xv` 是一整块数据，不是一个数。想想 `triton.language` 里哪些函数逐元素地作用于块。",
  "不要用 Python 的 `if`；用一个块级原语同时处理所有 lane。同时记住，结果在 NaN 上也必须与 `torch.relu` 一致。",
  "`tl.maximum(xv, 0.0)` 对普通数值是对的，但默认参数会把 NaN 变成 0.0。看看 `tl.maximum` 的 `propagate_nan` 参数。",
  "`tl.maximum(xv, 0.0, propagate_nan=tl.PropagateNan.ALL)`。它与 `torch.relu` 一样保留 NaN；`tl.where(xv > 0.0, xv, 0.0)` 和默认的 `tl.maximum` 都会把 NaN 变成 0.0。"
 ],
 "lesson": "lesson03_relu",
 "locale": "zh-CN",
 "messages": {
  "at_line": "（第 {line} 行）",
  "bench_block": "你的 relu，BLOCK={block}",
  "bench_copy": "设备内拷贝（out.copy_(x)）",
  "bench_needs_gpu": "--bench 需要 CUDA GPU；解释器的速度不能说明 GPU 的性能",
  "bench_note": "GB/s 按读入与写出的字节数之和计算；第一次调用（JIT 编译）不计时。",
  "bench_title": "{device} 上的带宽，{n} 个 float32 元素（读入 {mib} MiB，写出同样多），预热后多次运行取中位数 · {versions}",
  "bench_vs_copy": "相对拷贝",
  "bench_vs_torch": "相对 torch.relu",
  "bench_yours": "你的 relu（默认 BLOCK）",
  "crashed": "崩溃（{code}）：运行内核的进程意外退出",
  "edits_outside": "注意：填空以外的行被修改了：{lines}。规则只允许修改填空处；老师会看到这条记录。",
  "env_gpu": "运行环境：{device} · {versions}",
  "env_interpreter": "运行环境：CPU 上的 Triton 解释器（未使用 CUDA GPU）· {versions}",
  "env_unknown": "运行环境：未知（代码未能启动）",
  "file_line": "文件：{file}",
  "fill_blank": "请补齐 {where} 处的填空：把 ______ 换成你的表达式",
  "fill_blank_next": "然后重新运行检查；`python check.py --hint 1` 可查看第一级提示",
  "help_bench": "在 CUDA GPU 上测带宽",
  "help_hint": "显示第 N 级提示（1-4）",
  "help_interpreter": "即使有 GPU 也使用 Triton 解释器",
  "help_json": "以 JSON 输出每个用例的结果",
  "help_path": "要检查的 .py 文件或 .ipynb 笔记本（默认：check.py 旁边的内核文件）",
  "help_report": "把提交报告写入 FILE",
  "help_timeout": "每个用例允许的秒数",
  "hint_answer_only": "第 4 级（完整答案）只在参考答案版中；请向老师求助",
  "hint_heading": "提示，第 {level} 级（{name}）：",
  "hint_range": "提示级别为 1 到 4",
  "import_error": "无法导入你的文件（{where}）：{text}",
  "import_timeout": "导入你的文件超过 {seconds} 秒，已被终止",
  "interpreter_banner": "解释器的结果不是 GPU 实测；bfloat16 用例需要 GPU，已跳过",
  "mismatch": "下标 {index}：输入 {input} -> 期望 {expected}，实际 {got}（{n} 个元素中有 {count} 个不同）",
  "next_fix": "下一步：修复第一个失败的用例，或运行 `python check.py --hint 1`",
  "next_submit": "下一步：写好解释后运行 `python check.py --report submission.md`",
  "no_cell_source": "找不到定义该函数的单元格源码",
  "no_exercise_cell": "{file} 中没有标记为 exercise 的单元格",
  "no_such_file": "找不到文件：{file}",
  "no_triton": "无法导入 Triton（{platform}）。Triton 只为 Linux 和 Windows 提供安装包；该怎么做，请看 README.md 中“{section}”一节。",
  "not_tensor": "函数返回了 {got}，而不是张量",
  "notebook_cell": "本笔记本的代码单元格",
  "notebook_failed": "自检未通过，请查看上面的输出",
  "raised": "抛出异常 {text}",
  "report_answer_here": "_你的答案：_",
  "report_code": "你的代码",
  "report_environment": "运行环境",
  "report_explain_here": "_请解释该用例为什么失败，以及你做了哪些修改：_",
  "report_failures": "失败用例与你的解释",
  "report_gpu": "在 {device} 上的 GPU 实测",
  "report_interpreter": "CPU 上的 Triton 解释器（不是 GPU 实测）",
  "report_no_failures": "全部用例通过。",
  "report_output": "check.py 的输出",
  "report_questions": "问答题答案",
  "report_run_kind": "运行方式",
  "report_static": "仅静态审查（代码没有运行）",
  "report_status": "结果",
  "report_title": "提交：{lesson}",
  "report_written": "报告已写入 {file}",
  "score": "得分：自动评分 {got}/{total}（正常输入 {normal}/{normal_total}，边界输入 {boundary}/{boundary_total}）",
  "score_graded": "另有实现解释 {explanation} 分与 Q1～Q{count} 共 {questions} 分，由老师评分",
  "skip_bf16_interpreter": "跳过：bfloat16 需要 GPU，Triton 解释器对它的计算是错的",
  "skip_needs_gpu": "跳过：需要 CUDA GPU",
  "syntax_error": "语法错误，位置 {where}：{text}",
  "timed_out": "超时：运行超过 {seconds} 秒，已被终止",
  "title": "coursepack 自检 · {lesson} · {locale} · {edition}",
  "version_differs": "注意：本包验证时使用 torch {torch} 与 triton {triton}，与你的版本不同",
  "where_cell": "{file}，第 {cell} 个单元格，第 {line} 行",
  "why": "原因：{text}",
  "worker_crashed": "加载你的代码时检查进程崩溃（{code}）{text}",
  "wrong_dtype": "输出 dtype 为 {got}，期望 {expected}",
  "wrong_shape": "输出形状为 {got}，期望 {expected}",
  "wrote_past_end_detail": "有一次写入落在 {n} 个元素的输出之外的第 {index} 个位置（越界写）"
 },
 "module": "relu.py",
 "questions": [
  "q1",
  "q2",
  "q3"
 ],
 "reasons": {
  "inf_wrong": "无穷大的处理不对：+inf 应保持 +inf，-inf 应变成 0。",
  "nan_dropped": "NaN 变成了 0.0。`NaN > 0.0` 为 False，默认参数的 `tl.maximum` 也返回非 NaN 的那个操作数；而 `torch.relu` 保留 NaN。试试 `python check.py --hint 3`。",
  "negatives_flipped": "负数变成了它的绝对值：ReLU 把负数变成 0，而不是取反。",
  "not_clamped": "负数没有被截断为 0：输出等于输入。填空处需要对每个元素取 max(x, 0)。",
  "positives_zeroed": "正数被变成了 0：看起来用了最小值而不是最大值。",
  "unwritten": "有元素没有被写入（仍是预先填入的毒值）：检查网格大小和 mask 是否覆盖了全部 n 个元素。",
  "wrong_value": "结果与 torch.relu 不一致。",
  "wrote_past_end": "写到了输出张量之外：`tl.store` 需要 `mask=mask`，否则最后一个块会越界写。"
 },
 "rubric": {
  "boundary": 1,
  "explanation": 1,
  "normal": 2,
  "pass_total": 8,
  "per_question": 2
 },
 "template": [
  "import torch",
  "import triton",
  "import triton.language as tl",
  "",
  "",
  "# ReLU 内核：每个 program 处理 BLOCK 个连续元素。",
  "# n 是普通参数而不是 tl.constexpr，这样不同长度的输入不会各自重新编译。",
  "@triton.jit",
  "def relu_kernel(x, out, n, BLOCK: tl.constexpr):",
  "    # 本 program 负责的元素下标：一个长度为 BLOCK 的块。",
  "    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)",
  "    # 最后一个块可能越过 n：被屏蔽的 lane 既不读也不写。",
  "    mask = offsets < n",
  "    xv = tl.load(x + offsets, mask=mask)",
  "    # 逐元素计算 ReLU 并写回；结果必须与 torch.relu 完全一致，包括 NaN。",
  "    tl.store(out + offsets, ______, mask=mask)  # TODO: ReLU（替换 ______）",
  "",
  "",
  "def relu(x, BLOCK=256):",
  "    # 内核按一维连续内存寻址，所以要求输入是连续的。",
  "    assert x.is_contiguous()",
  "    out = torch.empty_like(x)",
  "    n = x.numel()",
  "    relu_kernel[(triton.cdiv(n, BLOCK),)](x, out, n, BLOCK=BLOCK)",
  "    return out",
  "",
  "",
  "if __name__ == \"__main__\":",
  "    # 种子示例：python relu.py（没有 GPU 时：TRITON_INTERPRET=1 python relu.py）",
  "    device = \"cuda\" if torch.cuda.is_available() else \"cpu\"",
  "    x = torch.tensor([-2.0, 0.0, 3.0, -4.0, 5.0], device=device)",
  "    torch.testing.assert_close(relu(x), torch.relu(x))",
  "    print(relu(x).tolist())"
 ],
 "timeout_s": 120,
 "title": "第 3 课 · ReLU"
}""")

BLANK = "______"
POISON = -1024.0          # exact in float32, float16 and bfloat16; ReLU never outputs it
GUARD = 4096              # poisoned elements on each side of the output, to catch stray writes
HERE = Path(__file__).resolve().parent
EXIT_PASS, EXIT_FAIL, EXIT_UNRUNNABLE = 0, 1, 2


def msg(key, **kw):
    return LESSON["messages"][key].format(**kw)


# ---------------------------------------------------------------------------------------------
# Static review: the file, the blank, edits outside the blank
# ---------------------------------------------------------------------------------------------

class Target:
    """The code under check: a .py file, or the exercise cell of a notebook written to a file."""

    def __init__(self, path, display, text, cell=None):
        self.path, self.display, self.text, self.cell = path, display, text, cell

    def where(self, line):
        if self.cell is not None:
            return msg("where_cell", file=self.display, cell=self.cell, line=line)
        return f"{self.display}:{line}"


def load_target(arg, workdir, display=None):
    path = Path(arg) if arg else HERE / LESSON["module"]
    display = display or (str(arg) if arg else LESSON["module"])
    if not path.exists():
        raise SystemExit(msg("no_such_file", file=display))
    if path.suffix == ".ipynb":
        notebook = json.loads(path.read_text(encoding="utf-8"))
        for index, cell in enumerate(notebook.get("cells", []), start=1):
            if "exercise" in cell.get("metadata", {}).get("tags", []):
                source = cell["source"]
                text = "".join(source) if isinstance(source, list) else source
                copy = Path(workdir) / LESSON["module"]
                copy.write_text(text, encoding="utf-8")
                return Target(copy, display, text, cell=index)
        raise SystemExit(msg("no_exercise_cell", file=display))
    return Target(path, display, path.read_text(encoding="utf-8"))


def code_lines(text):
    """The lines of text with comments and trailing blanks removed (None if it won't tokenize)."""
    lines = text.splitlines()
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return None
    for tok in reversed(tokens):
        if tok.type == tokenize.COMMENT:
            row, col = tok.start
            lines[row - 1] = lines[row - 1][:col]
    return [line.rstrip() for line in lines]


def blank_lines(text):
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return [i for i, line in enumerate(text.splitlines(), 1) if BLANK in line.split("#")[0]]
    return sorted({tok.start[0] for tok in tokens if tok.type == tokenize.NAME and tok.string == BLANK})


def review_edits(text):
    """Line numbers changed outside the blank, and the student's fill if the blank line matches."""
    template = code_lines("\n".join(LESSON["template"]) + "\n")
    mine = code_lines(text)
    if mine is None or template is None:
        return [], None
    blank_index = LESSON["blank_line"] - 1
    head, _, tail = template[blank_index].partition(BLANK)
    pattern = re.compile(re.escape(head.strip()) + r"(.*)" + re.escape(tail.strip()) + "$")
    fill, changed = None, []
    matcher = difflib.SequenceMatcher(a=[l.strip() for l in template], b=[l.strip() for l in mine], autojunk=False)
    for op, a0, a1, b0, b1 in matcher.get_opcodes():
        if op == "equal":
            continue
        if op == "replace" and a0 <= blank_index < a1 and (a1 - a0) == (b1 - b0):
            found = pattern.match(mine[b0 + blank_index - a0].strip())
            if found:
                fill = found.group(1).strip()
                changed += [b + 1 for b in range(b0, b1) if b != b0 + blank_index - a0]
                continue
        changed += list(range(b0 + 1, b1 + 1)) or [max(b0, 1)]
    return sorted(set(changed)), fill


# ---------------------------------------------------------------------------------------------
# The worker: runs in a child process, imports the student's module, runs the cases
# ---------------------------------------------------------------------------------------------

def worker_main(path, case_ids, force_interpreter):
    proto = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)   # the student's prints go to stderr; stdout carries only our messages

    def send(**message):
        proto.write(json.dumps(message) + "\n")

    import torch
    use_gpu = torch.cuda.is_available() and not force_interpreter
    if not use_gpu:
        os.environ["TRITON_INTERPRET"] = "1"   # must be set before @triton.jit runs
    import triton
    send(hello=environment(torch, triton, use_gpu))
    try:
        module = import_student(path)
        fn = getattr(module, LESSON["entry"])
    except SyntaxError as exc:
        send(load_error={"kind": "syntax", "line": exc.lineno, "column": exc.offset, "text": exc.msg})
        return 0
    except BaseException as exc:  # the student's module may raise anything at import
        send(load_error={"kind": "import", "line": student_line(exc, path), "text": f"{type(exc).__name__}: {exc}"})
        return 0
    device = "cuda" if use_gpu else "cpu"
    cases = {case["id"]: case for case in LESSON["cases"]}
    for case_id in case_ids:
        case = cases[case_id]
        send(start=case_id)
        skip = skip_reason(case, use_gpu)
        if skip:
            send(case=case_id, status="skip", reason=skip)
            continue
        try:
            send(case=case_id, **run_case(torch, fn, case, device))
        except BaseException as exc:
            send(case=case_id, status="error", line=student_line(exc, path),
                 text=f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}")
    send(done=True)
    return 0


def environment(torch, triton, use_gpu):
    env = {"torch": torch.__version__, "triton": triton.__version__,
           "python": sys.version.split()[0], "interpreter": not use_gpu}
    if use_gpu:
        env["device"] = torch.cuda.get_device_name(0)
    return env


def import_student(path):
    import importlib.util
    sys.path.insert(0, str(Path(path).parent))
    spec = importlib.util.spec_from_file_location("student_" + Path(path).stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def student_line(exc, path):
    import traceback
    target = os.path.realpath(path)
    lines = [frame.lineno for frame in traceback.extract_tb(exc.__traceback__)
             if os.path.realpath(frame.filename) == target]
    return lines[-1] if lines else None


def skip_reason(case, use_gpu):
    if case.get("gpu_only") and not use_gpu:
        return "needs_gpu"
    if case["dtype"] == "bfloat16" and not use_gpu:
        return "bf16_interpreter"
    return None


def make_input(torch, case):
    dtype = getattr(torch, case["dtype"])
    size = case.get("size")
    values = [float(v) for v in case.get("values") or []]
    if size is None:
        return torch.tensor(values, dtype=torch.float64).to(dtype)
    generator = torch.Generator().manual_seed(zlib.crc32(case["id"].encode()))
    x = torch.rand(size, generator=generator, dtype=torch.float64) * 8 + 0.125
    x[::2] *= -1   # alternating signs: a kernel that does not clamp fails every case
    if values and size:
        step = max(size // len(values), 1)
        for i, value in enumerate(values):
            x[min(i * step, size - 1) if i < len(values) - 1 else size - 1] = value
    return x.to(dtype)


class PoisonedOutputs:
    """Makes torch.empty_like return poisoned memory with guard bands while the kernel runs."""

    def __init__(self, torch):
        self.torch, self.buffers = torch, []

    def __enter__(self):
        torch, original = self.torch, self.torch.empty_like
        self.original = original

        def poisoned(t, *args, **kwargs):
            plain = original(t, *args, **kwargs)
            if args or set(kwargs) - {"dtype", "device"} or not plain.is_floating_point():
                return plain
            n = plain.numel()
            buffer = torch.full((n + 2 * GUARD,), POISON, dtype=plain.dtype, device=plain.device)
            self.buffers.append((buffer, n))
            return buffer[GUARD:GUARD + n].view(plain.shape)

        torch.empty_like = poisoned
        return self

    def __exit__(self, *exc):
        self.torch.empty_like = self.original
        return False

    def stray_write(self, out):
        """Index (relative to the output's start) of the first write outside the output."""
        for buffer, n in self.buffers:
            if out.numel() and out.data_ptr() != buffer[GUARD:].data_ptr():
                continue
            if not out.numel() and n != 0:
                continue
            host = buffer.detach().double().cpu()
            before = (host[:GUARD] != POISON).nonzero()
            after = (host[GUARD + n:] != POISON).nonzero()
            if len(after):
                return n + int(after[0])
            if len(before):
                return int(before[-1]) - GUARD
        return None


def run_case(torch, fn, case, device):
    x_host = make_input(torch, case)
    x = x_host.to(device)
    expected = torch.relu(x_host).double()
    poison = PoisonedOutputs(torch)
    with poison:
        out = fn(x)
    if device == "cuda":
        torch.cuda.synchronize()
    if not isinstance(out, torch.Tensor):
        return {"status": "fail", "reason": "not_tensor", "got_type": type(out).__name__}
    if tuple(out.shape) != tuple(x.shape):
        return {"status": "fail", "reason": "wrong_shape", "expected": list(x.shape), "got": list(out.shape)}
    if out.dtype != x.dtype:
        return {"status": "fail", "reason": "wrong_dtype", "expected": str(x.dtype), "got": str(out.dtype)}
    stray = poison.stray_write(out)
    if stray is not None:
        return {"status": "fail", "reason": "wrote_past_end", "index": stray, "n": x.numel()}
    got = out.detach().double().cpu()
    inputs = x_host.double()
    same = (got == expected) | (torch.isnan(got) & torch.isnan(expected))
    bad = (~same).nonzero().flatten()
    if not len(bad):
        return {"status": "pass", "n": x.numel()}
    first = int(bad[0])
    return {"status": "fail", "reason": classify(torch, inputs, expected, got, bad),
            "index": first, "input": fmt(inputs[first]), "expected": fmt(expected[first]),
            "got": fmt(got[first]), "count": len(bad), "n": x.numel()}


def classify(torch, inputs, expected, got, bad):
    """The most telling known mistake among the differing elements."""
    x, g = inputs[bad], got[bad]
    if bool((g == POISON).any()):
        return "unwritten"
    if bool((torch.isnan(x) & (g == 0)).any()):
        return "nan_dropped"
    negative = x < 0
    if bool((negative & (g == x)).any()):
        return "not_clamped"
    if bool((negative & (g == -x)).any()):
        return "negatives_flipped"
    if bool(((x > 0) & (g == 0)).any()):
        return "positives_zeroed"
    if bool((torch.isinf(x)).any()):
        return "inf_wrong"
    return "wrong_value"


def fmt(value):
    value = float(value)
    if value != value:
        return "nan"
    if value in (float("inf"), float("-inf")):
        return "inf" if value > 0 else "-inf"
    return repr(value)


# ---------------------------------------------------------------------------------------------
# The supervisor: runs workers, enforces timeouts, survives crashes
# ---------------------------------------------------------------------------------------------

class Supervisor:
    def __init__(self, target, timeout, force_interpreter):
        self.target, self.timeout, self.force_interpreter = target, timeout, force_interpreter
        self.env, self.load_error, self.results, self.stderr_tail = None, None, {}, ""

    def run(self, case_ids):
        pending = list(case_ids)
        while pending and self.load_error is None:
            done = self._one_worker(pending)
            pending = [c for c in pending if c not in self.results]
            if not done and not pending:
                break
        return self.results

    def _spawn(self, case_ids):
        command = [sys.executable, "-u", str(Path(__file__).resolve()), "--worker", str(self.target.path),
                   "--cases", ",".join(case_ids)]
        if self.force_interpreter:
            command.append("--interpreter")
        return subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, start_new_session=True)

    def _one_worker(self, case_ids):
        process = self._spawn(case_ids)
        messages = queue.Queue()
        stderr_chunks = []
        threading.Thread(target=_pump_lines, args=(process.stdout, messages), daemon=True).start()
        threading.Thread(target=_pump_bytes, args=(process.stderr, stderr_chunks), daemon=True).start()
        current, deadline = None, time.monotonic() + self.timeout + 120   # import + first compile
        try:
            while True:
                try:
                    line = messages.get(timeout=max(deadline - time.monotonic(), 0.01))
                except queue.Empty:
                    self._record_hang(current)
                    return False
                if line is None:   # the worker ended
                    process.wait()
                    self.stderr_tail = _tail(b"".join(stderr_chunks))
                    if current is not None and current not in self.results:
                        self.results[current] = {"status": "crash", "code": _exit_text(process.returncode),
                                                 "stderr": self.stderr_tail}
                    elif self.env is None or (current is None and self.load_error is None):
                        self.load_error = {"kind": "crash", "code": _exit_text(process.returncode),
                                           "text": self.stderr_tail}
                    return True
                message = json.loads(line)
                if "hello" in message:
                    self.env = message["hello"]
                elif "load_error" in message:
                    self.load_error = message["load_error"]
                elif "start" in message:
                    current, deadline = message["start"], time.monotonic() + self.timeout
                elif "case" in message:
                    self.results[message.pop("case")] = message
                    current = None
                elif "done" in message:
                    process.wait()
                    return True
        finally:
            _kill(process)

    def _record_hang(self, current):
        if current is None:
            self.load_error = {"kind": "timeout", "seconds": self.timeout}
        else:
            self.results[current] = {"status": "timeout", "seconds": self.timeout}


def _pump_lines(stream, messages):
    for raw in stream:
        text = raw.decode("utf-8", "replace").strip()
        if text.startswith("{"):
            messages.put(text)
    messages.put(None)


def _pump_bytes(stream, chunks):
    for raw in stream:
        chunks.append(raw)


def _tail(data, lines=6):
    return "\n".join(data.decode("utf-8", "replace").strip().splitlines()[-lines:])


def _exit_text(code):
    if code is not None and code < 0:
        try:
            return signal.Signals(-code).name
        except ValueError:
            return f"signal {-code}"
    return f"exit status {code}"


def _kill(process):
    if process.poll() is None:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            process.kill()
        process.wait()


# ---------------------------------------------------------------------------------------------
# Presentation: lines in the pack's language, score, JSON
# ---------------------------------------------------------------------------------------------

def env_line(env):
    if env is None:
        return msg("env_unknown")
    versions = f"torch {env['torch']} · triton {env['triton']}"
    if env["interpreter"]:
        return msg("env_interpreter", versions=versions)
    return msg("env_gpu", device=env["device"], versions=versions)


def version_warning(env):
    verified = read_verified()
    if not verified or env is None:
        return None
    theirs = (verified.get("torch"), verified.get("triton"))
    if theirs != (env["torch"], env["triton"]):
        return msg("version_differs", torch=theirs[0], triton=theirs[1], runner=verified.get("runner_label", ""))
    return None


def read_verified():
    manifest = HERE / "manifest.json"
    try:
        record = json.loads(manifest.read_text(encoding="utf-8")).get("verification")
    except (OSError, ValueError):
        return {}
    return record if isinstance(record, dict) else {}


def case_detail(result):
    status = result["status"]
    if status == "fail":
        reason = result["reason"]
        if reason in ("wrong_shape", "wrong_dtype"):
            return [msg(reason, expected=result["expected"], got=result["got"])]
        if reason == "not_tensor":
            return [msg("not_tensor", got=result["got_type"])]
        if reason == "wrote_past_end":
            return [msg("wrote_past_end_detail", index=result["index"], n=result["n"]),
                    msg("why", text=LESSON["reasons"]["wrote_past_end"])]
        lines = [msg("mismatch", **{k: result[k] for k in ("index", "input", "expected", "got", "count", "n")})]
        if reason in LESSON["reasons"]:
            lines.append(msg("why", text=LESSON["reasons"][reason]))
        return lines
    if status == "error":
        return [msg("raised", text=result["text"]) + (msg("at_line", line=result["line"]) if result.get("line") else "")]
    if status == "timeout":
        return [msg("timed_out", seconds=result["seconds"])]
    if status == "crash":
        lines = [msg("crashed", code=result["code"])]
        return lines + ["  " + l for l in result.get("stderr", "").splitlines()[-3:]]
    if status == "skip":
        return []
    return []


def score(cases, results):
    rubric = LESSON["rubric"]
    points = {}
    for group in ("normal", "boundary"):
        ran = [c for c in cases if c["group"] == group and results.get(c["id"], {}).get("status") != "skip"]
        passed = [c for c in ran if results.get(c["id"], {}).get("status") == "pass"]
        points[group] = (rubric[group] * len(passed) // len(ran)) if ran else 0
    return points


def render_report(target, env, results, edits, load_error, blank):
    """All lines a student sees, and the overall status."""
    lines = [msg("title", lesson=LESSON["title"], locale=LESSON["locale"], edition=LESSON["edition_name"]),
             msg("file_line", file=target.display if target.cell is None else target.where(1).rsplit(",", 1)[0])]
    if env is not None:
        lines.append(env_line(env))
        if env["interpreter"]:
            lines.append("  " + msg("interpreter_banner"))
        warning = version_warning(env)
        if warning:
            lines.append("  " + warning)
    lines.append("")
    if blank:
        lines += [msg("fill_blank", where=", ".join(target.where(n) for n in blank)), msg("fill_blank_next")]
        return lines, "blank"
    if load_error is not None:
        kind = load_error["kind"]
        if kind == "syntax":
            lines.append(msg("syntax_error", where=target.where(load_error["line"] or 1), text=load_error["text"]))
        elif kind == "import":
            where = target.where(load_error["line"]) if load_error.get("line") else target.display
            lines.append(msg("import_error", where=where, text=load_error["text"]))
        elif kind == "timeout":
            lines.append(msg("import_timeout", seconds=load_error["seconds"]))
        else:
            lines.append(msg("worker_crashed", code=load_error.get("code", ""), text=load_error.get("text", "")))
        return lines, "load_error"
    symbols = {"pass": "PASS", "fail": "FAIL", "error": "FAIL", "timeout": "FAIL", "crash": "FAIL", "skip": "SKIP"}
    for case in LESSON["cases"]:
        result = results.get(case["id"], {"status": "crash", "code": "?"})
        name = LESSON["case_names"][case["id"]]
        if result["status"] == "skip":
            name += "  (" + LESSON["messages"]["skip_" + result["reason"]] + ")"
        lines.append(f"  {symbols[result['status']]:4}  {name}")
        lines += ["        " + d for d in case_detail(result)]
    if edits:
        lines += ["", msg("edits_outside", lines=", ".join(map(str, edits)))]
    points = score(LESSON["cases"], results)
    rubric = LESSON["rubric"]
    auto_total = rubric["normal"] + rubric["boundary"]
    lines += ["", msg("score", got=points["normal"] + points["boundary"], total=auto_total,
                      normal=points["normal"], normal_total=rubric["normal"],
                      boundary=points["boundary"], boundary_total=rubric["boundary"]),
              "       " + msg("score_graded", explanation=rubric["explanation"],
                              questions=rubric["per_question"] * len(LESSON["questions"]),
                              count=len(LESSON["questions"]))]
    failed = [c for c in LESSON["cases"] if results.get(c["id"], {}).get("status") not in ("pass", "skip")]
    lines.append(msg("next_fix") if failed else msg("next_submit"))
    return lines, "fail" if failed else "pass"


def json_result(target, env, results, edits, fill, load_error, status):
    points = score(LESSON["cases"], results) if status in ("pass", "fail") else {"normal": 0, "boundary": 0}
    return {"lesson": LESSON["lesson"], "locale": LESSON["locale"], "edition": LESSON["edition"],
            "file": target.display, "status": status, "environment": env, "load_error": load_error,
            "edits_outside_blank": edits, "fill": fill,
            "cases": [dict(id=c["id"], group=c["group"], **results.get(c["id"], {"status": "not_run"}))
                      for c in LESSON["cases"]],
            "score": points}


def write_submission(path, target, env, lines, status, results):
    ran = env is not None and status in ("pass", "fail")
    if not ran:
        run_kind = msg("report_static")
    elif env["interpreter"]:
        run_kind = msg("report_interpreter")
    else:
        run_kind = msg("report_gpu", device=env["device"])
    failed = [c for c in LESSON["cases"] if results.get(c["id"], {}).get("status") in ("fail", "error", "timeout", "crash")]
    out = [f"# {msg('report_title', lesson=LESSON['title'])}", "",
           f"- {msg('report_run_kind')}: {run_kind}",
           f"- {msg('report_environment')}: {env_line(env) if ran else msg('report_static')}",
           f"- {msg('report_status')}: {status}", "",
           f"## {msg('report_code')}", "", "```python", target.text.rstrip(), "```", "",
           f"## {msg('report_output')}", ""]
    out += (["```text", *lines, "```"] if ran else [msg("report_static"), "", "```text", *lines, "```"])
    out += ["", f"## {msg('report_failures')}", ""]
    if failed:
        for case in failed:
            out += [f"### {LESSON['case_names'][case['id']]}", "", msg("report_explain_here"), ""]
    else:
        out += [msg("report_no_failures"), ""]
    out += [f"## {msg('report_questions')}", ""]
    for q in LESSON["questions"]:
        out += [f"### {q.upper()}", "", msg("report_answer_here"), ""]
    Path(path).write_text("\n".join(out), encoding="utf-8")


# ---------------------------------------------------------------------------------------------
# Bandwidth bench (GPU only)
# ---------------------------------------------------------------------------------------------

def bench(target, sizes_log2=28):
    import torch
    if not torch.cuda.is_available():
        print(msg("bench_needs_gpu"))
        return EXIT_UNRUNNABLE
    import triton
    from triton.testing import do_bench
    module = import_student(target.path)
    fn = getattr(module, LESSON["entry"])
    free, _ = torch.cuda.mem_get_info()
    n = 1 << sizes_log2
    while n * 4 * 3 > free * 0.8 and n > 1 << 20:
        n //= 2
    x = torch.randn(n, device="cuda")
    out = torch.empty_like(x)
    nbytes = 2 * x.numel() * x.element_size()

    def gbps(ms):
        return nbytes / (ms * 1e-3) / 1e9

    fn(x)   # the first call compiles; it is not timed
    copy_ms = do_bench(lambda: out.copy_(x), warmup=50, rep=300, return_mode="median")
    torch_ms = do_bench(lambda: torch.relu(x), warmup=50, rep=300, return_mode="median")
    rows = [(msg("bench_copy"), copy_ms), ("torch.relu", torch_ms)]
    mine_ms = do_bench(lambda: fn(x), warmup=50, rep=300, return_mode="median")
    rows.append((msg("bench_yours"), mine_ms))
    for block in (128, 256, 512, 1024, 2048, 4096):
        try:
            fn(x, BLOCK=block)
        except TypeError:
            break
        ms = do_bench(lambda: fn(x, BLOCK=block), warmup=50, rep=300, return_mode="median")
        rows.append((msg("bench_block", block=block), ms))
    device = torch.cuda.get_device_name(0)
    print(msg("bench_title", device=device, n=n, mib=x.numel() * 4 >> 20,
              versions=f"torch {torch.__version__} · triton {triton.__version__}"))
    print(f"  {'':32} {'ms':>8} {'GB/s':>8} {msg('bench_vs_copy'):>10} {msg('bench_vs_torch'):>12}")
    for name, ms in rows:
        print(f"  {name:32} {ms:8.3f} {gbps(ms):8.0f} {copy_ms / ms:10.2f} {torch_ms / ms:12.2f}")
    print(msg("bench_note"))
    return EXIT_PASS


# ---------------------------------------------------------------------------------------------
# Entry points
# ---------------------------------------------------------------------------------------------

def parse_args(argv):
    parser = argparse.ArgumentParser(prog="check.py", description=LESSON.get("title", "coursepack check"))
    parser.add_argument("path", nargs="?", help=msg("help_path"))
    parser.add_argument("--json", action="store_true", help=msg("help_json"))
    parser.add_argument("--hint", type=int, metavar="N", help=msg("help_hint"))
    parser.add_argument("--report", metavar="FILE", help=msg("help_report"))
    parser.add_argument("--bench", action="store_true", help=msg("help_bench"))
    parser.add_argument("--timeout", type=float, default=LESSON.get("timeout_s", 120), help=msg("help_timeout"))
    parser.add_argument("--interpreter", action="store_true", help=msg("help_interpreter"))
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--cases", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def show_hint(level):
    hints = LESSON["hints"]
    if not 1 <= level <= 4:
        print(msg("hint_range"))
        return EXIT_UNRUNNABLE
    if level > len(hints):
        print(msg("hint_answer_only"))
        return EXIT_UNRUNNABLE
    print(msg("hint_heading", level=level, name=LESSON["hint_names"][level - 1]))
    print(hints[level - 1])
    return EXIT_PASS


def check(args, out=print, display=None):
    with tempfile.TemporaryDirectory(prefix="coursepack-check-") as workdir:
        target = load_target(args.path, workdir, display)
        if args.bench:
            return bench(target)
        edits, fill = review_edits(target.text)
        blank = blank_lines(target.text)
        env, results, load_error = None, {}, None
        if not blank:
            supervisor = Supervisor(target, args.timeout, args.interpreter)
            results = supervisor.run([c["id"] for c in LESSON["cases"]])
            env, load_error = supervisor.env, supervisor.load_error
        lines, status = render_report(target, env, results, edits, load_error, blank)
        if args.json:
            out(json.dumps(json_result(target, env, results, edits, fill, load_error, status),
                           ensure_ascii=False, indent=1))
        else:
            out("\n".join(lines))
        if args.report:
            write_submission(args.report, target, env, lines, status, results)
            if not args.json:
                out(msg("report_written", file=args.report))
        return {"pass": EXIT_PASS, "fail": EXIT_FAIL}.get(status, EXIT_UNRUNNABLE)


class CheckFailed(Exception):
    """Raised by check_notebook so that a notebook run stops at a failing check cell."""


def check_notebook(entry_function):
    """The notebook's check cell: check the cell that defined entry_function, same output as check.py."""
    import inspect
    import linecache
    source_file = inspect.getsourcefile(entry_function)
    text = "".join(linecache.getlines(source_file)) if source_file else ""
    if not text:
        raise CheckFailed(msg("no_cell_source"))
    with tempfile.TemporaryDirectory(prefix="coursepack-cell-") as workdir:
        path = Path(workdir) / LESSON["module"]
        path.write_text(text, encoding="utf-8")
        args = parse_args([str(path)])
        code = check(args, display=msg("notebook_cell"))
    if code != EXIT_PASS:
        raise CheckFailed(msg("notebook_failed"))


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if args.worker:
        return worker_main(args.worker, args.cases.split(",") if args.cases else [], args.interpreter)
    if args.hint is not None:
        return show_hint(args.hint)
    return check(args)


if __name__ == "__main__":
    sys.exit(main())
