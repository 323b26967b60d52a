"""The partition read before submitting, the layout fitted to it, and the pending reasons that
waiting cannot clear. Slurm's answers are the text Slurm 22.05 printed on the test cluster of
tests/launch/conftest.py (captured, so that every layout rule is checked without a cluster; the
cluster tests in test_slurm_real.py run the same code against the real one)."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.launch.plan import Config
from advisor.launch.slurm import SlurmOptions, sbatch_script
from advisor.launch.slurm_partition import Partition, layout_for, read_partition, time_minutes
from advisor.launch.slurm_pending import cannot_start, reason_word, unavailable_nodes

SINFO = "n1|2|(null)|idle|debug*\nn1|2|(null)|idle|one\nn2|2|(null)|drain|debug*\n"
SCONTROL_ONE = (
    "PartitionName=one AllowGroups=ALL Default=NO MaxNodes=UNLIMITED MaxTime=UNLIMITED "
    "Nodes=n1 State=UP TotalCPUs=2 TotalNodes=1"
)
SCONTROL_DEBUG = (
    "PartitionName=debug Default=YES MaxNodes=4 MaxTime=1:00:00 Nodes=n[1-2] TotalNodes=2"
)


def _slurm(answers: dict[str, str]):
    def run(argv):
        return next((out for key, out in answers.items() if key in " ".join(argv)), None)

    return run


def test_the_partition_as_sinfo_and_scontrol_describe_it():
    one = read_partition("one", _slurm({"sinfo": SINFO, "show partition one": SCONTROL_ONE}))
    assert one == Partition("one", 1, 2, 0, None, None)
    # the default partition (marked *), its drained node left out, its limits read
    default = read_partition(None, _slurm({"sinfo": SINFO, "show partition debug": SCONTROL_DEBUG}))
    assert default == Partition("debug", 1, 2, 0, 4, 3600.0)
    assert read_partition("one", _slurm({})) is None  # no sinfo here: scripts for elsewhere


def test_workers_are_packed_onto_the_nodes_the_partition_has():
    one_node = Partition("one", 1, 2, 0)
    packed = layout_for(2, 1, explicit=False, partition=one_node)
    assert (packed.nodes, packed.tasks_per_node) == (1, 2)
    assert packed.describe() == "2 tasks on 1 node (packed: partition one has 1 node)"
    assert layout_for(3, 1, False, Partition("p", 2, 8, 0)).describe() == (
        "3 tasks on 2 nodes (packed: partition p has 2 nodes)"
    )
    # more tasks than a node has CPUs: said in the layout (Slurm will refuse or hold it)
    assert "of 2 CPUs" in layout_for(4, 1, False, one_node).describe()
    assert layout_for(2, 1, False, Partition("big", 8, 2, 0)).describe() == "2 tasks on 2 nodes"
    # the user's --tasks-per-node is kept, even where it cannot fit
    assert layout_for(2, 1, True, one_node).nodes == 2
    assert layout_for(2, 1, False, None).nodes == 2  # nothing known: the default layout
    # a per-job node limit counts like missing nodes
    assert layout_for(8, 1, False, Partition("p", 8, 8, 0, max_nodes=2)).tasks_per_node == 4


def test_the_time_limit_caps_the_jobs_time():
    assert time_minutes(1800, Partition("p", 1, 1, 0, max_time_s=600)) == 10
    assert time_minutes(61, None) == 2 and time_minutes(None, None) is None


def test_the_script_follows_the_layout_and_keeps_the_users_nodes():
    cluster = Partition("one", 1, 2, 0)
    options = SlurmOptions(gpus_per_node=0, partition="one", cluster=cluster)
    text = sbatch_script(Config("multiworker", 2), ["python", "t.py"], "s", Path("/r"), Path("/l"),
                         options=options)  # fmt: skip
    assert "#SBATCH --nodes=1\n#SBATCH --ntasks=2\n#SBATCH --ntasks-per-node=2\n" in text
    assert "ADVISOR_TASKS_PER_NODE=2" in text
    # --nodes among the sbatch options: no --ntasks (sbatch would shrink --nodes to it)
    five = SlurmOptions(gpus_per_node=0, extra=["--nodes=5"])
    text = sbatch_script(Config("multiworker", 2), ["python", "t.py"], "s", Path("/r"), Path("/l"),
                         options=five)  # fmt: skip
    assert "--ntasks=2\n" not in text and "#SBATCH --nodes=5" in text
    assert "srun --kill-on-bad-exit=1 --ntasks=2 " in text
    assert five.layout(Config("single", 1)).describe() == (
        "1 task on 5 nodes (--nodes=5 from --sbatch-arg)"
    )


@pytest.mark.parametrize(
    "reason,fix",
    [
        ("PartitionNodeLimit", "--tasks-per-node"),
        ("PartitionConfig", "sinfo"),
        ("PartitionTimeLimit", "--timeout"),
        ("QOSMaxNodePerJobLimit", "per-job limit"),
        ("AssocMaxWallDurationPerJobLimit", "per-job limit"),
        ("BadConstraints", "--constraint"),
        ("InvalidAccount", "--account"),
        ("InvalidQOS", "--qos"),
        # reasons that clear as other jobs end: waited for
        ("Resources", None),
        ("Priority", None),
        ("Dependency", None),
        ("AssocGrpCpuLimit", None),
        ("QOSMaxJobsPerUserLimit", None),
        ("None", None),
        (None, None),
    ],
)
def test_pending_reasons_that_waiting_cannot_clear(reason, fix):
    found = cannot_start(reason, _slurm({}))
    assert (found is None) if fix is None else (fix in found)


def test_unavailable_nodes_fail_only_when_down_or_drained():
    reason = "ReqNodeNotAvail,_UnavailableNodes:n[1-2],n5"
    assert reason_word(reason) == "ReqNodeNotAvail"
    assert unavailable_nodes(reason) == ["n[1-2]", "n5"]
    assert "down or drained" in cannot_start(reason, _slurm({"sinfo": "drain\ndown*\ndrain\n"}))
    assert cannot_start(reason, _slurm({"sinfo": "drain\nmix\nidle\n"})) is None  # some will free
    assert cannot_start(reason, _slurm({})) is None  # sinfo not answering: wait
