"""Memory the trusted side reads itself (generator/checker/trusted/memory.py), piece by piece on the CPU: a
case's region (a memfd) laid out and written, what the trusted side reads back after a worker's
writes, the worker's views of it, the descriptor crossing a socket, and stopping a process group.
The whole path, through workers and the sandbox, is in tests/test_adversarial.py (tm_*.py)."""

import os
import socket
import threading
import time
import types

import pytest

from generator.checker import join


@pytest.fixture()
def rt():
    """check.py as one module, with a ReLU lesson of one input x."""
    module = types.ModuleType("cp_checker_memory")
    module.__file__ = str(join.HERE / "check.py")
    exec(compile(join.joined(), "check.py", "exec"), module.__dict__)
    module.LESSON.update(
        {
            "inputs": [{"name": "x", "shape": ["N"]}],
            "poison": -1024.0,
            "lesson_reasons": [],
            "compare": {},
            "messages": {},
            "reference": "import torch\ndef reference(x):\n    return torch.relu(x)\n",
        }
    )
    return module


def shared(rt, n=300):
    import torch

    prepared = rt.PreparedCase(torch, {"id": "c", "group": "normal", "dims": {"N": n}}, False)
    layout = rt.lay_out(prepared.made, prepared.expected)
    region = rt.Region(torch, layout["nbytes"], "cpu")
    sent = rt.image(torch, prepared.made, prepared.expected, layout, "cpu")
    region.tensor[: sent.numel()].copy_(sent)
    return torch, prepared, layout, region, sent


def entry(fields, nbytes=0):
    """A case report with one output entry, as a worker sends it (nbytes: the bytes it sends)."""
    return {"outputs": [dict(fields, nbytes=nbytes)]}


def views(torch, rt, region, layout, prepared):
    """The worker's arguments and output area, as run_one builds them."""
    args, areas = rt.region_arguments(
        torch, region.tensor, {"region": layout, "inputs": prepared.inputs}
    )
    return args, areas[0]  # the case's one call


def test_the_layout_puts_each_storage_and_the_output_inside_guard_bands(rt):
    torch, prepared, layout, region, sent = shared(rt)
    spec, out = layout["inputs"][0], layout["outputs"][0][0]
    assert spec["offset"] % 4 == 0 and spec["offset"] >= rt.GUARD * 4 and spec["count"] == 300
    assert out["offset"] >= spec["offset"] + (300 + 2 * rt.GUARD) * 4 and out["shape"] == [300]
    words = sent.view(torch.float32)
    start = spec["offset"] // 4
    assert (
        torch.isnan(words[start - rt.GUARD : start]).all()
        and torch.isnan(words[start + 300 : start + 300 + rt.GUARD]).all()
    )
    assert torch.equal(words[start : start + 300], prepared.made[0][1])
    first = out["offset"] // 4
    assert bool((words[first - rt.GUARD : first + 300 + rt.GUARD] == -1024.0).all())
    region.close()


def test_an_honest_output_in_the_area_passes_and_leaves_the_input_alone(rt):
    torch, prepared, layout, region, sent = shared(rt)
    (x,), (area,) = views(torch, rt, region, layout, prepared)
    out = area["base"].as_strided(area["shape"], (1,), area["start"])
    out.copy_(torch.relu(x))
    report = entry(
        {
            "output": {"dtype": "float32", "shape": [300]},
            "guard": None,
            "at": layout["outputs"][0][0]["offset"],
            "stride": [1],
        }
    )
    result, modified = rt.read_back(torch, prepared, layout, sent, region, report, b"")
    assert result["status"] == "pass" and not modified
    region.close()


def test_an_output_computed_in_the_input_is_read_there_and_is_an_input_modified(rt):
    torch, prepared, layout, region, sent = shared(rt)
    (x,), _ = views(torch, rt, region, layout, prepared)
    x.clamp_(min=0)
    report = entry(
        {
            "output": {"dtype": "float32", "shape": [300]},
            "at": layout["inputs"][0]["offset"],
            "stride": [1],
        }
    )
    result, modified = rt.read_back(torch, prepared, layout, sent, region, report, b"")
    assert result["status"] == "pass" and modified
    region.close()


def test_a_write_past_the_areas_end_fails_whatever_tensor_comes_back(rt):
    torch, prepared, layout, region, sent = shared(rt)
    (x,), (area,) = views(torch, rt, region, layout, prepared)
    spilled = area["base"].as_strided((307,), (1,), area["start"])
    spilled.copy_(torch.relu(torch.cat([x, x[:7]])))
    clone = torch.relu(x).clone()
    report = entry({"output": {"dtype": "float32", "shape": [300]}, "guard": None}, 1200)
    result, _ = rt.read_back(
        torch, prepared, layout, sent, region, report, rt.tensor_bytes(torch, clone)
    )
    assert (
        result["status"] == "fail"
        and result["reason"] == "wrote_past_end"
        and result["index"] == 300
    )
    region.close()


def test_bytes_from_elsewhere_do_not_outvote_a_wrong_area(rt):
    """The worker sends the right answer as bytes; the area the kernel wrote holds zeros."""
    torch, prepared, layout, region, sent = shared(rt)
    (x,), (area,) = views(torch, rt, region, layout, prepared)
    area["base"].as_strided(area["shape"], (1,), area["start"]).zero_()
    report = entry({"output": {"dtype": "float32", "shape": [300]}, "guard": None}, 1200)
    result, _ = rt.read_back(
        torch, prepared, layout, sent, region, report, rt.tensor_bytes(torch, torch.relu(x))
    )
    assert result["status"] == "fail"
    region.close()


def test_a_location_outside_the_region_is_a_protocol_error(rt):
    torch, prepared, layout, region, sent = shared(rt)
    report = entry(
        {"output": {"dtype": "float32", "shape": [300]}, "at": sent.numel() - 8, "stride": [1]}
    )
    with pytest.raises(rt.ProtocolError):
        rt.read_back(torch, prepared, layout, sent, region, report, b"")
    region.close()


def test_the_region_crosses_a_socket_and_the_worker_sees_the_same_memory(rt):
    import torch

    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    region = rt.Region(torch, 1 << 16, "cpu")
    region.send(ours)
    seen, _ = rt.map_region(torch, theirs, region.nbytes, "cpu")
    seen[:4] = torch.tensor([1, 2, 3, 4], dtype=torch.uint8)
    assert region.tensor[:4].tolist() == [1, 2, 3, 4]
    assert (
        rt.region_offset(seen[8:16], seen) == 8
        and rt.region_offset(torch.zeros(4, dtype=torch.uint8), seen) is None
    )
    region.close()
    ours.close()
    theirs.close()


def _case_maps() -> int:
    with open("/proc/self/maps", encoding="utf-8") as maps:
        return sum("coursepack-case" in line for line in maps)


def test_a_retired_region_frees_its_memory_and_a_kept_view_stays_readable(rt):
    """The worker gives each case's region back before the next case (a worker that kept them all
    held every case's memory until it ended): after retire() the memfd is no longer mapped, a view
    the code under check kept still reads (zeros) and writes, and the trusted side's memory is
    no longer the worker's."""
    import torch

    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    before = _case_maps()
    region = rt.Region(torch, 1 << 20, "cpu")
    region.send(ours)
    seen, retire = rt.map_region(torch, theirs, region.nbytes, "cpu")
    kept = seen[100:200]
    seen[:4] = torch.tensor([1, 2, 3, 4], dtype=torch.uint8)
    assert region.tensor[:4].tolist() == [1, 2, 3, 4] and _case_maps() == before + 2
    retire()
    assert _case_maps() == before + 1  # the trusted side's own mapping only
    region.tensor[100:200] = 7
    assert int(kept.sum()) == 0  # zero pages of the worker's own, not the trusted side's memory
    kept += 1
    assert int(kept.sum()) == 100 and int(region.tensor[100:200].sum()) == 700
    region.close()
    assert _case_maps() == before  # the memfd is gone: its memory freed
    ours.close()
    theirs.close()


def test_a_process_group_is_stopped_thread_by_thread_and_resumed(rt):
    """stop_group returns once every thread of the group is stopped; a stopped child does not run."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.setpgid(0, 0)
        os.close(read)

        def tick():
            while True:
                os.write(write, b".")
                time.sleep(0.001)

        threading.Thread(target=tick, daemon=True).start()
        while True:
            time.sleep(0.01)
    os.close(write)
    try:
        os.read(read, 1)
        assert rt.stop_group(pid)
        states = rt._group_states(pid)
        assert len(states) >= 2 and set(states) <= set("tT")
        os.set_blocking(read, False)
        while True:  # what was written before the stop
            try:
                if not os.read(read, 4096):
                    break
            except BlockingIOError:
                break
        time.sleep(0.05)
        with pytest.raises(BlockingIOError):
            os.read(read, 1)
        rt.resume_group(pid)
        os.set_blocking(read, True)
        assert os.read(read, 1) == b"."
    finally:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        os.close(read)


def test_a_child_in_a_session_of_its_own_is_stopped_too(rt):
    """A process the worker started with setsid has left its group, not its parent: it is found
    under it in /proc and stopped with it."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.setpgid(0, 0)
        if os.fork() == 0:
            os.setsid()
            while True:
                os.write(write, b".")
                time.sleep(0.001)
        while True:
            time.sleep(0.01)
    os.close(write)
    try:
        os.read(read, 1)
        assert rt.stop_group(pid)
        os.set_blocking(read, False)
        time.sleep(0.01)
        while True:
            try:
                if not os.read(read, 4096):
                    break
            except BlockingIOError:
                break
        time.sleep(0.05)
        with pytest.raises(BlockingIOError):
            os.read(read, 1)
        rt.resume_group(pid)
        os.set_blocking(read, True)
        assert os.read(read, 1) == b"."
    finally:
        for child in rt._descendants(pid) or []:
            os.kill(child, 9)
        os.waitpid(pid, 0)
        os.close(read)
