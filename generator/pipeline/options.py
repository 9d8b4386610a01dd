"""What a build is asked to do (BuildOptions) and what it did (BuildResult)."""

from dataclasses import dataclass, field
from pathlib import Path
from generator.files.resources import TEMPLATES, default_out  # TEMPLATES: --templates overrides
from generator.runners.options import RunnerOptions


@dataclass
class BuildOptions(RunnerOptions):
    """A build's settings; the runner's (runner, python, runner_command, slurm, jobs) are
    RunnerOptions', keyword-only. No default depends on the working directory: the content folder
    is always given, and out defaults to build/ beside it."""

    content: Path
    templates: Path = TEMPLATES
    out: Path = None  # type: ignore[assignment]  # default: build/ beside the content folder
    verify: bool = True
    notebook: bool = True
    sandbox: str = "auto"  # auto | on | off: the checker's sandbox for the answer and the mistakes
    lessons: tuple[str, ...] = ()
    locales: tuple[str, ...] = ()
    draft: bool = False  # every translation built as a draft (missing units fall back, marked)

    def __post_init__(self) -> None:
        if self.out is None:
            self.out = default_out(self.content)


@dataclass
class BuildResult:
    zips: dict[str, str] = field(default_factory=dict)  # name -> sha256
    verification: dict[str, dict] = field(default_factory=dict)  # lesson/locale -> record
    disagreements: dict[str, list] = field(default_factory=dict)
    cached: dict[str, bool] = field(default_factory=dict)
    seconds: float = 0.0
    failed: list[str] = field(default_factory=list)
    fallbacks: list[dict] = field(default_factory=list)
    tasks: list[dict] = field(
        default_factory=list
    )  # the runner's tasks (lesson, state, job id, seconds)
    job_ids: list[str] = field(
        default_factory=list
    )  # every Slurm job a build used (the probe's too)
